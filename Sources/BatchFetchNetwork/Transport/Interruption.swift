import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers

/// The run's stop switch: set by `RunHandle.interrupt()` (SIGINT/SIGTERM in the CLI). Jobs
/// check it before each request and while waiting to retry; requests in flight are cancelled
/// through the handlers registered here, keeping their partials and sidecars for a rerun.
package final class Interruption: Sendable {
    private struct State {
        var interrupted = false
        var handlers: [ObjectIdentifier: any WatchedHandler] = [:]
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    package var isInterrupted: Bool { state.withLockedValue { $0.interrupted } }

    package func interrupt() {
        let active = state.withLockedValue { state -> [any WatchedHandler] in
            state.interrupted = true
            return Array(state.handlers.values)
        }
        for handler in active { handler.interrupt() }
    }

    /// Tracks a request while it runs; returns false (and registers nothing) once interrupted.
    package func register(_ handler: any WatchedHandler) -> Bool {
        state.withLockedValue { state in
            guard !state.interrupted else { return false }
            state.handlers[ObjectIdentifier(handler)] = handler
            return true
        }
    }

    package func unregister(_ handler: any WatchedHandler) {
        _ = state.withLockedValue { $0.handlers.removeValue(forKey: ObjectIdentifier(handler)) }
    }

    /// Sleeps up to `seconds`, waking early when interrupted. Returns false if interrupted.
    package func sleep(_ duration: Duration) async -> Bool {
        let end = ContinuousClock.now + min(duration, .seconds(86_400))
        while !isInterrupted {
            let left = end - .now
            if left <= .zero { return true }
            try? await Task.sleep(for: min(left, .milliseconds(100)))
        }
        return false
    }
}
