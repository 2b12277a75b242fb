import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// The jobs in flight and their progress, shared by the scheduler and the progress ticker; and
/// the run's bytes: done against known, so a run's bar tells how far the bytes are, not the
/// jobs (one 1 GiB job among small ones is most of the run).
///
/// Bytes known are the sizes the manifest gives for the jobs not started, each running job's
/// total (the manifest's, or the one its response announced), and what finished jobs
/// published; a job that fails or is skipped leaves the sum. Nothing per job is kept beyond the
/// ones running: a million-job run holds three numbers for the rest.
final class ActiveJobs: Sendable {
    private struct State {
        var active: [Int: (id: String, progress: JobProgress, started: DispatchTime, expected: Int64?)] = [:]
        var finished = 0
        var finishedTransferred: Int64 = 0
        /// Bytes of the jobs that succeeded: their files' sizes.
        var finishedBytes: Int64 = 0
        /// Sizes the manifest gives for the jobs not started yet.
        var pendingBytes: Int64
        /// Jobs not started yet whose size the manifest does not give.
        var pendingUnsized: Int

        /// A job leaves the ones not started: its size (if the manifest gives one) leaves their sum.
        mutating func leavePending(_ expected: Int64?) {
            if let expected { pendingBytes -= expected } else { pendingUnsized -= 1 }
        }
    }

    private let jobs: Int
    private let started: DispatchTime
    private let state: NIOLockedValueBox<State>

    init(jobs: [Job], started: DispatchTime) {
        self.jobs = jobs.count
        self.started = started
        let sized = jobs.lazy.compactMap { (job: Job) in job.size }
        state = NIOLockedValueBox(State(pendingBytes: sized.reduce(0, +), pendingUnsized: jobs.count - sized.count))
    }

    /// A job starts, expecting `expected` bytes (the manifest's size); returns the seconds since
    /// the run started (the report's `started_seconds`).
    @discardableResult
    func add(_ index: Int, id: String, progress: JobProgress, expected: Int64?) -> Double {
        let now = DispatchTime.now()
        state.withLockedValue { state in
            state.active[index] = (id, progress, now, expected)
            state.leavePending(expected)
        }
        return now.seconds(since: started)
    }

    /// A job that was running finished with `result`.
    func finished(_ index: Int, _ result: JobResult) {
        state.withLockedValue { state in
            state.active[index] = nil
            state.finished += 1
            state.finishedTransferred += result.bytesTransferred
            if result.status.succeeded { state.finishedBytes += result.size ?? 0 }
        }
    }

    /// A job that never started finished (skipped); it expected `expected` bytes.
    func skipped(expected: Int64?) {
        state.withLockedValue { state in
            state.finished += 1
            state.leavePending(expected)
        }
    }

    /// The run's progress now, or nil when no job is in flight.
    func snapshot() -> RunProgress? {
        state.withLockedValue { state in
            guard !state.active.isEmpty else { return nil }
            let now = DispatchTime.now()
            let entries = state.active.sorted { $0.key < $1.key }.map { _, entry -> RunProgress.Active in
                let (bytes, total, transferred, unpacking) = entry.progress.snapshot
                return RunProgress.Active(id: entry.id, bytes: bytes, total: total, transferred: transferred,
                                          elapsed: now.seconds(since: entry.started), unpacking: unpacking)
            }
            var progress = RunProgress(elapsed: now.seconds(since: started), jobs: jobs, finished: state.finished, active: entries,
                                       transferred: state.finishedTransferred + entries.reduce(0) { $0 + $1.transferred })
            progress.bytesDone = state.finishedBytes + entries.reduce(0) { $0 + $1.bytes }
            progress.bytesKnown = state.finishedBytes + state.pendingBytes + entries.reduce(0) { $0 + $1.knownBytes }
            progress.unsized = state.pendingUnsized + entries.count { $0.total == nil }
            return progress
        }
    }
}
