import Foundation
import NIOConcurrencyHelpers

/// The run's stop switch: set by `RunHandle.interrupt()` (SIGINT/SIGTERM in the CLI). Jobs
/// check it before each request and while waiting to retry; requests in flight are cancelled
/// through the handlers registered here, keeping their partials and sidecars for a rerun.
final class Interruption: Sendable {
    private struct State {
        var interrupted = false
        var handlers: [ObjectIdentifier: any WatchedHandler] = [:]
    }

    private let state = NIOLockedValueBox(State())

    var isInterrupted: Bool { state.withLockedValue { $0.interrupted } }

    func interrupt() {
        let active = state.withLockedValue { state -> [any WatchedHandler] in
            state.interrupted = true
            return Array(state.handlers.values)
        }
        for handler in active { handler.interrupt() }
    }

    /// Tracks a request while it runs; returns false (and registers nothing) once interrupted.
    func register(_ handler: any WatchedHandler) -> Bool {
        state.withLockedValue { state in
            guard !state.interrupted else { return false }
            state.handlers[ObjectIdentifier(handler)] = handler
            return true
        }
    }

    func unregister(_ handler: any WatchedHandler) {
        _ = state.withLockedValue { $0.handlers.removeValue(forKey: ObjectIdentifier(handler)) }
    }

    /// Sleeps up to `seconds`, waking early when interrupted. Returns false if interrupted.
    func sleep(_ seconds: Double) async -> Bool {
        let end = DispatchTime.now() + .nanoseconds(Int(min(seconds, 86_400) * 1e9))
        while !isInterrupted {
            let left = end.seconds(since: .now())
            if left <= 0 { return true }
            try? await Task.sleep(nanoseconds: UInt64(min(left, 0.1) * 1e9))
        }
        return false
    }
}
