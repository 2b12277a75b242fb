@testable import BatchFetchEngine
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A request whose transport never reports the end of a cancelled transfer (as AsyncHTTPClient
/// did for an upload cancelled between the answer and the end of its body) still ends: the
/// watch's lost handler ends it, instead of its waiter waiting forever.
@Suite struct RequestWatchTests {
    /// A transfer that ignores cancels and never ends; counts the cancels.
    final class DeafTask: TransportTask, Sendable {
        let cancels = NIOLockedValueBox(0)
        func cancel() { cancels.withLockedValue { $0 += 1 } }
    }

    @Test func anIdleTransferWhoseCancelIsLostStillEnds() async {
        let watch = RequestWatch<String>()
        watch.whenLost { watch.complete { expired in expired ? "lost after the idle timeout" : "lost" } }
        let task = DeafTask()
        watch.attach(task)
        let started = ContinuousClock.now
        let outcome = await watch.outcome(idleTimeout: .seconds(1), deadline: nil)
        let waited = ContinuousClock.now - started

        #expect(outcome == "lost after the idle timeout")
        #expect(task.cancels.withLockedValue { $0 } == 1)
        #expect(waited >= RequestWatch<String>.lostAfter + .seconds(1))
    }

    /// A transfer that reports its end after the cancel keeps its own outcome; the lost handler
    /// never runs.
    @Test func aTransferThatEndsAfterTheCancelGivesItsOwnOutcome() async {
        let watch = RequestWatch<String>()
        let lostRan = NIOLockedValueBox(false)
        watch.whenLost { lostRan.withLockedValue { $0 = true } }
        let task = DeafTask()
        watch.attach(task)
        Task {
            try? await Task.sleep(for: .milliseconds(100))
            watch.cancel()
            watch.complete { _ in "ended by the transport" }
        }
        let outcome = await watch.outcome(idleTimeout: .seconds(30), deadline: nil)
        try? await Task.sleep(for: RequestWatch<String>.lostAfter + .milliseconds(500))

        #expect(outcome == "ended by the transport")
        #expect(task.cancels.withLockedValue { $0 } == 1)
        #expect(!lostRan.withLockedValue { $0 })
    }
}
