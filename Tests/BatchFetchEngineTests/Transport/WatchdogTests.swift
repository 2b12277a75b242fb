@testable import BatchFetchEngine
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The one timer that watches every request: each is checked at the interval it asked for, also
/// when a slower one was there first, and the timer stops when there is nothing to watch.
@Suite struct WatchdogTests {
    /// Counts its checks.
    final class Counter: Watched {
        let checks = NIOLockedValueBox(0)
        func check(at now: ContinuousClock.Instant) { checks.withLockedValue { $0 += 1 } }
        var count: Int { checks.withLockedValue { $0 } }
    }

    /// Waits until `condition` holds, for at most `seconds`; false if it never did.
    static func eventually(within seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func aShortIntervalAddedAfterALongOneIsCheckedAtItsOwnPace() async {
        let watchdog = Watchdog()
        let slow = Counter(), fast = Counter()
        watchdog.add(slow, every: .seconds(60))
        watchdog.add(fast, every: .milliseconds(20))
        #expect(await Self.eventually { fast.count >= 5 })
        // Every tick checks everything watched.
        #expect(slow.count >= 5)
        watchdog.remove(fast)
        watchdog.remove(slow)
        #expect(await Self.eventually { !watchdog.isTicking })
    }

    @Test func aRemovedItemIsNotCheckedAgain() async {
        let watchdog = Watchdog()
        let kept = Counter(), removed = Counter()
        watchdog.add(kept, every: .milliseconds(20))
        watchdog.add(removed, every: .milliseconds(20))
        #expect(await Self.eventually { removed.count >= 1 })
        watchdog.remove(removed)
        let checksWhenRemoved = removed.count
        let keptWhenRemoved = kept.count
        #expect(await Self.eventually { kept.count >= keptWhenRemoved + 5 })
        // At most a tick that had already taken the list when it was removed.
        #expect(removed.count <= checksWhenRemoved + 1)
        watchdog.remove(kept)
    }
}
