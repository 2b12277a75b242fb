@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A request whose transport never reports the end of a cancelled transfer (as AsyncHTTPClient
/// did for an upload cancelled between the answer and the end of its body) still ends: the
/// watch's lost handler ends it, instead of its waiter waiting forever. Time is a
/// ``ManualClock`` the tests advance.
@Suite struct RequestWatchTests {
    /// A transfer that ignores cancels and never ends; counts the cancels.
    final class DeafTask: TransportTask, Sendable {
        let cancels = NIOLockedValueBox(0)
        func cancel() { cancels.withLockedValue { $0 += 1 } }
        var count: Int { cancels.withLockedValue { $0 } }
    }

    @Test func anIdleTransferWhoseCancelIsLostStillEnds() async {
        let clock = ManualClock()
        let watchdog = Watchdog(time: clock)
        let watch = RequestWatch<String>(watchdog: watchdog)
        watch.whenLost { watch.complete { expired in expired ? "lost after the idle timeout" : "lost" } }
        let task = DeafTask()
        watch.attach(task)
        let outcome = Task { await watch.outcome(idleTimeout: .seconds(1), deadline: nil) }
        #expect(await ManualClock.until { watchdog.isTicking })

        // Idle for exactly the timeout is not yet past it; the next tick is.
        clock.advance(by: .seconds(1))
        #expect(task.count == 0)
        clock.advance(by: .milliseconds(250))
        #expect(task.count == 1)

        // The transport never reports the end: the lost handler does, lostAfter later.
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: RequestWatch<String>.lostAfter - .milliseconds(1))
        #expect(clock.sleepers == 1)
        clock.advance(by: .milliseconds(1))
        #expect(await outcome.value == "lost after the idle timeout")
        #expect(task.count == 1)
    }

    /// A transfer that reports its end after the cancel keeps its own outcome; the lost handler
    /// never runs.
    @Test func aTransferThatEndsAfterTheCancelGivesItsOwnOutcome() async {
        let clock = ManualClock()
        let watch = RequestWatch<String>(watchdog: Watchdog(time: clock))
        let lostRan = NIOLockedValueBox(false)
        watch.whenLost { lostRan.withLockedValue { $0 = true } }
        let task = DeafTask()
        watch.attach(task)
        let outcome = Task { await watch.outcome(idleTimeout: .seconds(30), deadline: nil) }
        let check = watch.cancel()
        watch.complete { _ in "ended by the transport" }
        #expect(await outcome.value == "ended by the transport")
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: RequestWatch<String>.lostAfter)
        await check?.value

        #expect(task.count == 1)
        #expect(!lostRan.withLockedValue { $0 })
    }

    /// The deadline ends a request that is never idle.
    @Test func theDeadlineEndsABusyRequest() async {
        let clock = ManualClock()
        let watchdog = Watchdog(time: clock)
        let watch = RequestWatch<String>(watchdog: watchdog)
        let task = DeafTask()
        watch.attach(task)
        let outcome = Task { await watch.outcome(idleTimeout: .seconds(2), deadline: clock.now + .seconds(3)) }
        #expect(await ManualClock.until { watchdog.isTicking })
        for _ in 0..<5 {
            clock.advance(by: .milliseconds(500))
            watch.touch()
        }
        #expect(task.count == 0)
        clock.advance(by: .milliseconds(500))
        #expect(task.count == 1)
        watch.complete { expired in expired ? "expired" : "ended" }
        #expect(await outcome.value == "expired")
    }
}
