import BatchFetchFiles
import BatchFetchNetwork
import NIOConcurrencyHelpers

/// How far one running job is, updated from the transport's queue and read by the progress
/// ticker. A lock, not atomics: `Synchronization.Atomic` needs macOS 15.
package final class JobProgress: Sendable {
    private struct State {
        var position: Int64 = 0
        var total: Int64?
        var transferred: Int64 = 0
        var unpacking: RunProgress.Unpacking?
    }

    private let state: NIOLockedValueBox<State>
    /// The run's count of every job's bytes, for `max_bytes`.
    private let run: RunBytes?

    init(total: Int64?, run: RunBytes? = nil) {
        state = NIOLockedValueBox(State(total: total))
        self.run = run
    }

    /// Bytes of the file now in `.part` (or about to be): where a body starts writing.
    func moved(to position: Int64, total: Int64?) {
        state.withLockedValue {
            $0.position = position
            if let total { $0.total = total }
        }
    }

    /// Body bytes received (and accepted) in this run.
    func received(_ count: Int) {
        state.withLockedValue {
            $0.position += Int64(count)
            $0.transferred += Int64(count)
        }
        run?.add(Int64(count))
    }

    /// The archive is being unpacked (`extract:`): entries read and bytes written so far.
    func unpacked(entries: Int, bytes: Int64) {
        state.withLockedValue { $0.unpacking = RunProgress.Unpacking(entries: entries, bytes: bytes) }
    }

    var snapshot: (position: Int64, total: Int64?, transferred: Int64, unpacking: RunProgress.Unpacking?) {
        state.withLockedValue { state in
            (state.total.map { min(state.position, $0) } ?? state.position, state.total, state.transferred, state.unpacking)
        }
    }
}

/// Bytes all of a run's jobs transferred (bodies received, files uploaded), for `max_bytes` (``RunBudget``): read when a job
/// is about to start (a soft cutoff), and calling `reached` once, from the transport's queue, the
/// moment the count reaches `limit` (a hard cutoff interrupts the run there, not at the next
/// progress tick).
package final class RunBytes: Sendable {
    private let state = NIOLockedValueBox<(total: Int64, fired: Bool)>((0, false))
    private let limit: Int64?
    private let reached: @Sendable () -> Void

    package init(limit: Int64? = nil, reached: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.reached = reached
    }

    package var total: Int64 { state.withLockedValue { $0.total } }

    func add(_ count: Int64) {
        let fire = state.withLockedValue { state -> Bool in
            state.total += count
            guard let limit, !state.fired, state.total >= limit else { return false }
            state.fired = true
            return true
        }
        if fire { reached() }
    }
}
