import Foundation

/// The run's stop switch: set by `RunHandle.interrupt()` (SIGINT/SIGTERM in the CLI). Jobs
/// check it before each request and while waiting to retry; requests in flight are cancelled
/// through the handlers registered here, keeping their partials and sidecars for a rerun.
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var interrupted = false
    private var handlers: [ObjectIdentifier: any WatchedHandler] = [:]

    var isInterrupted: Bool { lock.withLock { interrupted } }

    func interrupt() {
        let active = lock.withLock { () -> [any WatchedHandler] in
            interrupted = true
            return Array(handlers.values)
        }
        for handler in active { handler.interrupt() }
    }

    /// Tracks a request while it runs; returns false (and registers nothing) once interrupted.
    func register(_ handler: any WatchedHandler) -> Bool {
        lock.withLock {
            guard !interrupted else { return false }
            handlers[ObjectIdentifier(handler)] = handler
            return true
        }
    }

    func unregister(_ handler: any WatchedHandler) {
        _ = lock.withLock { handlers.removeValue(forKey: ObjectIdentifier(handler)) }
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
