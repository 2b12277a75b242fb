import Foundation

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
/// `@unchecked`: its state (the timer source is not `Sendable`) is touched only under `lock`.
final class Watchdog: @unchecked Sendable {
    static let shared = Watchdog()

    private struct State {
        var watched: [ObjectIdentifier: (item: any Watched, interval: Duration)] = [:]
        var timer: (any DispatchSourceTimer)?
        var interval: Duration?
    }

    private let lock = NSLock()
    private var state = State()
    private let queue = DispatchQueue(label: "batchfetch.watchdog")

    /// Watches `item`, checking it at least every `interval`, until ``remove(_:)``.
    func add(_ item: any Watched, every interval: Duration) {
        lock.withLock {
            state.watched[ObjectIdentifier(item)] = (item, interval)
            if state.interval.map({ interval < $0 }) ?? true { schedule(every: interval) }
        }
    }

    func remove(_ item: any Watched) {
        _ = lock.withLock { state.watched.removeValue(forKey: ObjectIdentifier(item)) }
    }

    /// Whether the timer runs (for tests).
    var isTicking: Bool {
        lock.withLock { state.timer != nil }
    }

    /// Starts the timer, or changes its interval. Caller holds the lock.
    private func schedule(every interval: Duration) {
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
        let items = lock.withLock { () -> [any Watched] in
            guard let shortest = state.watched.values.map(\.interval).min() else {
                state.timer?.cancel()
                state.timer = nil
                state.interval = nil
                return []
            }
            if shortest != state.interval { schedule(every: shortest) }
            return state.watched.values.map(\.item)
        }
        let now = ContinuousClock.now
        for item in items { item.check(at: now) }
    }
}
