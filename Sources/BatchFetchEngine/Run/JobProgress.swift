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

    init(total: Int64?) {
        state = NIOLockedValueBox(State(total: total))
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
