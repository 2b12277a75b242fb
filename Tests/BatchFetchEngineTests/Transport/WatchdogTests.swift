@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The one timer that watches every request: each is checked at the interval it asked for, also
/// when a slower one was there first, and the timer stops when there is nothing to watch. Time
/// is a ``ManualClock``: the checks are counted exactly.
@Suite struct WatchdogTests {
    /// Counts its checks.
    final class Counter: Watched {
        let checks = NIOLockedValueBox(0)
        func check(at now: ContinuousClock.Instant) { checks.withLockedValue { $0 += 1 } }
        var count: Int { checks.withLockedValue { $0 } }
    }

    @Test func aShortIntervalAddedAfterALongOneIsCheckedAtItsOwnPace() {
        let clock = ManualClock()
        let watchdog = Watchdog(time: clock)
        let slow = Counter(), fast = Counter()
        watchdog.add(slow, every: .seconds(60))
        watchdog.add(fast, every: .milliseconds(20))
        clock.advance(by: .milliseconds(100))
        #expect(fast.count == 5)
        // Every tick checks everything watched.
        #expect(slow.count == 5)
        watchdog.remove(fast)
        watchdog.remove(slow)
        #expect(watchdog.isTicking)
        clock.advance(by: .milliseconds(20))
        #expect(!watchdog.isTicking)
        clock.advance(by: .seconds(120))
        #expect(slow.count == 5)
    }

    @Test func aRemovedItemIsNotCheckedAgain() {
        let clock = ManualClock()
        let watchdog = Watchdog(time: clock)
        let kept = Counter(), removed = Counter()
        watchdog.add(kept, every: .milliseconds(20))
        watchdog.add(removed, every: .milliseconds(20))
        clock.advance(by: .milliseconds(20))
        #expect(removed.count == 1 && kept.count == 1)
        watchdog.remove(removed)
        clock.advance(by: .milliseconds(100))
        #expect(kept.count == 6)
        #expect(removed.count == 1)
        watchdog.remove(kept)
    }

    /// The system time ticks too (the one test on real time: it waits for the ticks, and
    /// asserts nothing about how long they took).
    @Test func theSystemTimeTicksUntilStopped() async {
        let ticks = NIOLockedValueBox(0)
        let ticker = SystemTime().repeating(every: .milliseconds(5)) { ticks.withLockedValue { $0 += 1 } }
        #expect(await ManualClock.until { ticks.withLockedValue { $0 } >= 3 })
        ticker.stop()
    }
}
