import Foundation
import NIOConcurrencyHelpers

/// Something the ``Watchdog`` looks at on each tick (a request in flight).
protocol Watched: AnyObject, Sendable {
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
/// idle process has no timer.
///
/// `@unchecked`: the timer source in its state is not `Sendable`; the state is touched only
/// inside `state`'s lock.
final class Watchdog: @unchecked Sendable {
    static let shared = Watchdog()

    private struct State {
        var watched: [ObjectIdentifier: (item: any Watched, interval: Duration)] = [:]
        var timer: (any DispatchSourceTimer)?
        var interval: Duration?
    }

    private let state = NIOLockedValueBox(State())
    private let queue = DispatchQueue(label: "batchfetch.watchdog")

    /// Watches `item`, checking it at least every `interval`, until ``remove(_:)``.
    func add(_ item: any Watched, every interval: Duration) {
        state.withLockedValue { state in
            state.watched[ObjectIdentifier(item)] = (item, interval)
            if state.interval.map({ interval < $0 }) ?? true { schedule(every: interval, in: &state) }
        }
    }

    func remove(_ item: any Watched) {
        _ = state.withLockedValue { $0.watched.removeValue(forKey: ObjectIdentifier(item)) }
    }

    /// Whether the timer runs (for tests).
    var isTicking: Bool {
        state.withLockedValue { $0.timer != nil }
    }

    /// Starts the timer, or changes its interval, in `state` (the caller holds its lock).
    private func schedule(every interval: Duration, in state: inout State) {
        let timer = state.timer ?? {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [self] in tick() }
            timer.activate()
            return timer
        }()
        let nanoseconds = Int(clamping: interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
        state.timer = timer
        state.interval = interval
    }

    private func tick() {
        let items = state.withLockedValue { state -> [any Watched] in
            guard let shortest = state.watched.values.map(\.interval).min() else {
                state.timer?.cancel()
                state.timer = nil
                state.interval = nil
                return []
            }
            if shortest != state.interval { schedule(every: shortest, in: &state) }
            return state.watched.values.map(\.item)
        }
        let now = ContinuousClock.now
        for item in items { item.check(at: now) }
    }
}
