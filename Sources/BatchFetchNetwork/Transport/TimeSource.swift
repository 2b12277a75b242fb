import BatchFetchFiles
import BatchFetchObjectStore
import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// The time the engine's timeouts read and wait on: now, a repeating tick and a sleep.
///
/// The idle timeout, the deadline and the lost-transfer check (``Watchdog``, ``RequestWatch``)
/// take one, so their tests advance a manual clock instead of sleeping and asserting how long
/// something took (`WatchdogTests`, `RequestWatchTests`). The engine runs on ``SystemTime``.
package protocol TimeSource: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Calls `tick` every `interval` until the returned ticker is stopped.
    func repeating(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any Ticker
    /// Returns once `duration` has passed.
    func sleep(for duration: Duration) async
}

/// A repeating tick, stopped once.
package protocol Ticker: Sendable {
    func stop()
}

/// The process's monotonic clock. Ticks run on one serial dispatch queue of their own, not on
/// the concurrency pool, so a pool busy with hashing and file I/O never delays a timeout.
package struct SystemTime: TimeSource {
    private static let queue = DispatchQueue(label: "batchfetch.ticks")

    package init() {}

    package var now: ContinuousClock.Instant { .now }

    package func repeating(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any Ticker {
        let ticker = QueueTicker(interval: interval, tick: tick)
        ticker.arm()
        return ticker
    }

    package func sleep(for duration: Duration) async {
        try? await Task.sleep(for: duration)
    }

    /// Re-arms itself after each tick until stopped: no timer object to keep, so nothing here
    /// needs `@unchecked Sendable`.
    private final class QueueTicker: Ticker {
        private let interval: DispatchTimeInterval
        private let tick: @Sendable () -> Void
        private let stopped = NIOLockedValueBox(false)

        init(interval: Duration, tick: @escaping @Sendable () -> Void) {
            let (seconds, attoseconds) = interval.components
            self.interval = .nanoseconds(Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
            self.tick = tick
        }

        func arm() {
            SystemTime.queue.asyncAfter(deadline: .now() + interval) { [self] in
                guard !stopped.withLockedValue({ $0 }) else { return }
                tick()
                arm()
            }
        }

        func stop() {
            stopped.withLockedValue { $0 = true }
        }
    }
}
