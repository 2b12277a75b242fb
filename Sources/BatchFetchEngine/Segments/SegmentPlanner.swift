import Foundation

/// The decisions of a segmented download, as a pure state machine: which byte range each
/// connection fetches next, which responses to a range request are acceptable, when a failed
/// range is retried and when segmenting is given up. ``SegmentedTransfer`` performs the I/O.
///
/// Work is handed out in pieces of at most ``pieceSize`` bytes, always the lowest range nobody has
/// written or claimed, so the written prefix — which the sha256 follows — grows steadily instead
/// of jumping at the end; a range that ends early goes back to the pool from its last written
/// byte. Giving up (``stop(_:)``) is never fatal: the owner continues from the written prefix
/// with a single stream, which also handles mirror failover.
public struct SegmentPlanner: Sendable {
    public struct Configuration: Sendable {
        public var total: Int64
        public var pieceSize: Int64
        /// The validator every range request carries in `If-Range`; a strong ETag is also compared
        /// with each 206's ETag.
        public var ifRange: String
        public var retries: Int
        public var backoff: Double
        public var backoffMax: Double

        public init(total: Int64, pieceSize: Int64, ifRange: String, retries: Int, backoff: Double, backoffMax: Double) {
            self.total = total
            self.pieceSize = max(1, pieceSize)
            self.ifRange = ifRange
            self.retries = retries
            self.backoff = backoff
            self.backoffMax = backoffMax
        }
    }

    /// What to make of the response to one range request.
    public enum Verdict: Sendable, Equatable {
        case accept
        /// A transient failure: retry this range after the delay.
        case retry(DownloadFailure, RetryDelay)
        /// Segmenting cannot go on (ranges not honoured, content changed, a hard error, or
        /// retries used up).
        case stop(DownloadFailure)
    }

    public let configuration: Configuration
    /// Bytes written and complete.
    public private(set) var done: ByteRanges
    /// Ranges handed to a connection and not yet returned.
    public private(set) var claimed = ByteRanges()
    /// Why segmenting ended early, once it has.
    public private(set) var stopReason: DownloadFailure?
    private var failures = 0

    public init(configuration: Configuration, done: ByteRanges = ByteRanges()) {
        self.configuration = configuration
        self.done = done.clipped(to: configuration.total)
    }

    /// Every byte is written.
    public var isComplete: Bool { done.prefix >= configuration.total }

    /// The next range to fetch, or nil when none is left unclaimed (or segmenting stopped).
    public mutating func claim() -> Range<Int64>? {
        guard stopReason == nil,
              let gap = done.union(claimed).firstGap(before: configuration.total) else { return nil }
        let range = gap.lowerBound..<min(gap.upperBound, gap.lowerBound + configuration.pieceSize)
        claimed.insert(range)
        return range
    }

    /// A claimed range is given back with its bytes up to `written` on disk; the rest returns to
    /// the pool.
    public mutating func release(_ range: Range<Int64>, writtenThrough written: Int64) {
        claimed.remove(range)
        done.insert(range.lowerBound..<min(max(written, range.lowerBound), range.upperBound))
    }

    /// Judges the response head to a request for `range`.
    public func judge(_ head: TransportResponseHead, for range: Range<Int64>, now: Date = Date()) -> Verdict {
        switch head.status {
        case 206:
            let answered = ResponseHeaders.contentRange(head.header("content-range"))
            guard let answered, answered.first == range.lowerBound, answered.last == range.upperBound - 1,
                  answered.total == configuration.total else {
                return .stop(DownloadFailure(.rangeNotHonoured,
                    "206 with Content-Range '\(head.header("content-range") ?? "none")' for bytes \(range.lowerBound)-\(range.upperBound - 1)/\(configuration.total)"))
            }
            if let mismatch = ResponseHeaders.rangeMismatch(head, ifRange: configuration.ifRange, recordedTotal: configuration.total) {
                return .stop(DownloadFailure(.remoteChanged, mismatch))
            }
            return .accept
        case 200:
            // Every range request here carries If-Range, and the server honoured ranges before:
            // the file changed, or the server stopped honouring ranges. Either way the written
            // ranges cannot be continued; the job starts over (a 200 whole body, or new segments).
            return .stop(DownloadFailure(.remoteChanged,
                "200 to a range request with If-Range: the file changed or the server ignores ranges now"))
        case 408, 429, 500...599:
            let after = ResponseHeaders.retryAfter(head.header("retry-after"), now: now)
            return .retry(DownloadFailure(.httpStatus, "HTTP \(head.status) for bytes \(range.lowerBound)-\(range.upperBound - 1)"),
                          after.map { RetryDelay(seconds: $0, jitter: false) } ?? backoff)
        default:
            return .stop(DownloadFailure(.httpStatus, "HTTP \(head.status) for bytes \(range.lowerBound)-\(range.upperBound - 1)"))
        }
    }

    /// A range request failed in a way worth retrying (connection, timeout, a retryable status):
    /// retry after the returned delay, or stop when the job's retries are used up.
    public mutating func failed(_ failure: DownloadFailure, delay: RetryDelay? = nil) -> Verdict {
        failures += 1
        guard failures <= configuration.retries else {
            stop(failure)
            return .stop(failure)
        }
        return .retry(failure, delay ?? backoff)
    }

    /// Ends segmenting: nothing more is handed out.
    public mutating func stop(_ failure: DownloadFailure) {
        if stopReason == nil { stopReason = failure }
    }

    private var backoff: RetryDelay {
        RetryDelay.backoff(failure: max(1, failures), base: configuration.backoff, cap: configuration.backoffMax)
    }
}
