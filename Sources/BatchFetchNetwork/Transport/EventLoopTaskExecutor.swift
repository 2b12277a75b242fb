import BatchFetchFiles
import BatchFetchObjectStore
import NIOCore
import NIOPosix

/// Runs Swift tasks on one SwiftNIO event loop, so that a small job and its request's response
/// share a thread.
///
/// Why: a job on the cooperative pool whose response arrives on an event loop crosses threads
/// several times per request (the request to the loop, the head and body back to the job); on
/// this two-core virtual machine those wake-ups were about a tenth of the time of a batch of
/// small files (bench/results/profile.md, "small jobs on the event loops"). A task preferring
/// this executor runs in the loop's task queue, and a continuation the response's delegate
/// resumes there runs on the same thread without waking any other.
///
/// What runs here must not block for long: the loop also reads and writes every connection it
/// owns. The runner places only jobs whose work is bounded here (``Runner``: a known size of at
/// most ``smallJobLimit``, no twin to copy, no per-file `fsync`).
package final class EventLoopTaskExecutor: TaskExecutor {
    package let loop: any EventLoop

    package init(loop: any EventLoop) {
        self.loop = loop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }

    /// The largest file a job may have to run on a loop: one write buffer, hashed and written
    /// in well under a millisecond, so a loop is never held up for longer.
    package static let smallJobLimit: Int64 = 1 << 20

    /// One executor per loop of the process's event loop group (the one AsyncHTTPClient uses).
    package static let all: [EventLoopTaskExecutor] = MultiThreadedEventLoopGroup.singleton.makeIterator().map {
        EventLoopTaskExecutor(loop: $0)
    }
}
