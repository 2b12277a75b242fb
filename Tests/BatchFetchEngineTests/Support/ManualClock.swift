@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import NIOConcurrencyHelpers

/// Time that moves only when a test says so (as swift-nio's `EmbeddedEventLoop.advanceTime`):
/// ``advance(by:)`` fires every tick and wakes every sleeper due on the way, in order, on the
/// caller's thread; nothing waits on the wall clock.
final class ManualClock: TimeSource {
    private struct Repeating {
        var id: Int
        var next: Duration
        var interval: Duration
        var tick: @Sendable () -> Void
    }

    private struct State {
        var elapsed = Duration.zero
        var repeating: [Repeating] = []
        var sleepers: [(until: Duration, wake: CheckedContinuation<Void, Never>)] = []
        var nextID = 0
    }

    private let origin = ContinuousClock.now
    private let state = NIOLockedValueBox(State())

    var now: ContinuousClock.Instant { origin + state.withLockedValue { $0.elapsed } }

    /// Sleepers waiting for time to pass.
    var sleepers: Int { state.withLockedValue { $0.sleepers.count } }

    func repeating(every interval: Duration, _ tick: @escaping @Sendable () -> Void) -> any Ticker {
        state.withLockedValue { state in
            state.nextID += 1
            state.repeating.append(Repeating(id: state.nextID, next: state.elapsed + interval, interval: interval, tick: tick))
            return Handle(clock: self, id: state.nextID)
        }
    }

    func sleep(for duration: Duration) async {
        await withCheckedContinuation { continuation in
            let due = state.withLockedValue { state -> Bool in
                guard duration > .zero else { return true }
                state.sleepers.append((state.elapsed + duration, continuation))
                return false
            }
            if due { continuation.resume() }
        }
    }

    /// Moves time forward by `duration`, firing what falls due, earliest first.
    func advance(by duration: Duration) {
        let target = state.withLockedValue { $0.elapsed + duration }
        while true {
            enum Due { case tick(@Sendable () -> Void), wake(CheckedContinuation<Void, Never>) }
            let due = state.withLockedValue { state -> Due? in
                let tick = state.repeating.indices.min { state.repeating[$0].next < state.repeating[$1].next }
                let sleeper = state.sleepers.indices.min { state.sleepers[$0].until < state.sleepers[$1].until }
                let tickAt = tick.map { state.repeating[$0].next }, wakeAt = sleeper.map { state.sleepers[$0].until }
                if let sleeper, let wakeAt, wakeAt <= target, tickAt.map({ wakeAt <= $0 }) ?? true {
                    state.elapsed = wakeAt
                    return .wake(state.sleepers.remove(at: sleeper).wake)
                }
                if let tick, let tickAt, tickAt <= target {
                    state.elapsed = tickAt
                    state.repeating[tick].next += state.repeating[tick].interval
                    return .tick(state.repeating[tick].tick)
                }
                state.elapsed = target
                return nil
            }
            switch due {
            case .tick(let tick)?: tick()
            case .wake(let continuation)?: continuation.resume()
            case nil: return
            }
        }
    }

    private func stop(_ id: Int) {
        state.withLockedValue { $0.repeating.removeAll { $0.id == id } }
    }

    private struct Handle: Ticker {
        let clock: ManualClock
        let id: Int
        func stop() { clock.stop(id) }
    }

    /// Waits until `condition` holds (an event of another task), yielding in between; false if
    /// it never does within many turns.
    static func until(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<1_000_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }
}
