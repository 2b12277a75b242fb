import BatchFetchFiles
import BatchFetchObjectStore
import NIOConcurrencyHelpers

/// Something the ``Watchdog`` looks at on each tick (a request in flight).
package protocol Watched: AnyObject, Sendable {
    /// Ends what has gone idle or passed its deadline by `now`.
    func check(at now: ContinuousClock.Instant)
}

/// One timer for every request in flight: each tick asks each watched request whether it went
/// idle or passed its deadline.
///
/// A watchdog task per request cost three thread switches per request (a task to start, a timer
/// to arm, a wake-up to cancel it) — a third of those of a 4 KiB file, and on a virtual machine a
/// switch to another core is expensive (bench/results/profile.md). The timer ticks at the
/// shortest interval asked for and stops at the first tick that finds nothing to watch, so an
/// idle process has no timer. Its time is a ``TimeSource``: tests advance a manual one.
package final class Watchdog: Sendable {
    package static let shared = Watchdog(time: SystemTime())

    private struct State {
        var watched: [ObjectIdentifier: (item: any Watched, interval: Duration)] = [:]
        var ticker: (any Ticker)?
        var interval: Duration?
    }

    package let time: any TimeSource
    private let state = NIOLockedValueBox(State())

    package init(time: any TimeSource) {
        self.time = time
    }

    /// Watches `item`, checking it at least every `interval`, until ``remove(_:)``.
    package func add(_ item: any Watched, every interval: Duration) {
        state.withLockedValue { state in
            state.watched[ObjectIdentifier(item)] = (item, interval)
            if state.interval.map({ interval < $0 }) ?? true { schedule(every: interval, in: &state) }
        }
    }

    package func remove(_ item: any Watched) {
        _ = state.withLockedValue { $0.watched.removeValue(forKey: ObjectIdentifier(item)) }
    }

    /// Whether the timer runs (for tests).
    package var isTicking: Bool {
        state.withLockedValue { $0.ticker != nil }
    }

    /// Starts the timer, or restarts it at a new interval, in `state` (the caller holds its lock).
    private func schedule(every interval: Duration, in state: inout State) {
        state.ticker?.stop()
        state.ticker = time.repeating(every: interval) { [self] in tick() }
        state.interval = interval
    }

    private func tick() {
        let items = state.withLockedValue { state -> [any Watched] in
            guard let shortest = state.watched.values.map(\.interval).min() else {
                state.ticker?.stop()
                state.ticker = nil
                state.interval = nil
                return []
            }
            if shortest != state.interval { schedule(every: shortest, in: &state) }
            return state.watched.values.map(\.item)
        }
        let now = time.now
        for item in items { item.check(at: now) }
    }
}
