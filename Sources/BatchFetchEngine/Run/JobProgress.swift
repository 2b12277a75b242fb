import Foundation

/// How far one running job is, updated from the transport's queue and read by the progress
/// ticker. A lock, not atomics: `Synchronization.Atomic` needs macOS 15.
public final class JobProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var position: Int64 = 0
    private var total: Int64?
    private var transferred: Int64 = 0

    init(total: Int64?) {
        self.total = total
    }

    /// Bytes of the file now in `.part` (or about to be): where a body starts writing.
    func moved(to position: Int64, total: Int64?) {
        lock.withLock {
            self.position = position
            if let total { self.total = total }
        }
    }

    /// Body bytes received (and accepted) in this run.
    func received(_ count: Int) {
        lock.withLock {
            position += Int64(count)
            transferred += Int64(count)
        }
    }

    var snapshot: (position: Int64, total: Int64?, transferred: Int64) {
        lock.withLock { (total.map { min(position, $0) } ?? position, total, transferred) }
    }
}
