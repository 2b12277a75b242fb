import BatchFetchFiles
import BatchFetchNetwork
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
struct SegmentPlanner: Sendable {
    struct Configuration: Sendable {
        var total: Int64
        var pieceSize: Int64
        /// The validator every range request carries in `If-Range`; a strong ETag is also compared
        /// with each 206's ETag.
        var ifRange: String
        /// The job's retries, backoff and Retry-After cap.
        var retry: RetryPolicy

        init(total: Int64, pieceSize: Int64, ifRange: String, retry: RetryPolicy) {
            self.total = total
            self.pieceSize = max(1, pieceSize)
            self.ifRange = ifRange
            self.retry = retry
        }
    }

    /// What to make of the response head to one range request (``judge(_:for:now:)``).
    enum HeadVerdict: Sendable, Equatable {
        case accept
        /// A response worth retrying (408, 429, 5xx), with the server's `Retry-After` in seconds:
        /// pass it to ``failed(_:retryAfter:)``, which decides.
        case retryable(BatchFetchError, retryAfter: Double?)
        /// Segmenting cannot go on (ranges not honoured, content changed, a hard error).
        case stop(BatchFetchError)
    }

    /// How one range request ended, for the connection that made it.
    enum Verdict: Sendable, Equatable {
        case accept
        /// A transient failure: retry this range after the delay.
        case retry(BatchFetchError, RetryDelay)
        /// Segmenting cannot go on (ranges not honoured, content changed, a hard error, or
        /// retries used up).
        case stop(BatchFetchError)
    }

    let configuration: Configuration
    /// Bytes written and complete.
    private(set) var done: ByteRanges
    /// Ranges handed to a connection and not yet returned.
    private(set) var claimed = ByteRanges()
    /// Why segmenting ended early, once it has.
    private(set) var stopReason: BatchFetchError?
    /// Counts the failed range requests the retry policy weighs (one count for all ranges).
    private var log = AttemptLog()

    init(configuration: Configuration, done: ByteRanges = ByteRanges()) {
        self.configuration = configuration
        self.done = done.clipped(to: configuration.total)
    }

    /// Every byte is written.
    var isComplete: Bool { done.prefix >= configuration.total }

    /// The next range to fetch, or nil when none is left unclaimed (or segmenting stopped).
    mutating func claim() -> Range<Int64>? {
        guard stopReason == nil,
              let gap = done.union(claimed).firstGap(before: configuration.total) else { return nil }
        let range = gap.lowerBound..<min(gap.upperBound, gap.lowerBound + configuration.pieceSize)
        claimed.insert(range)
        return range
    }

    /// A claimed range is given back with its bytes up to `written` on disk; the rest returns to
    /// the pool.
    mutating func release(_ range: Range<Int64>, writtenThrough written: Int64) {
        claimed.remove(range)
        done.insert(range.lowerBound..<min(max(written, range.lowerBound), range.upperBound))
    }

    /// Judges the response head to a request for `range`.
    func judge(_ head: TransportResponseHead, for range: Range<Int64>, now: Date = Date()) -> HeadVerdict {
        switch head.status {
        case 206:
            let answered = ResponseHeaders.contentRange(head.header("content-range"))
            guard let answered, answered.first == range.lowerBound, answered.last == range.upperBound - 1,
                  answered.total == configuration.total else {
                return .stop(BatchFetchError(.rangeNotHonoured,
                    "206 with Content-Range '\(head.header("content-range") ?? "none")' for bytes \(range.lowerBound)-\(range.upperBound - 1)/\(configuration.total)"))
            }
            if let mismatch = ResponseHeaders.rangeMismatch(head, ifRange: configuration.ifRange, recordedTotal: configuration.total) {
                return .stop(BatchFetchError(.remoteChanged, mismatch))
            }
            return .accept
        case 200:
            // Every range request here carries If-Range, and the server honoured ranges before:
            // the file changed, or the server stopped honouring ranges. Either way the written
            // ranges cannot be continued; the job starts over (a 200 whole body, or new segments).
            return .stop(BatchFetchError(.remoteChanged,
                "200 to a range request with If-Range: the file changed or the server ignores ranges now"))
        default:
            switch AttemptVerdict(status: head.status, retryAfter: head.header("retry-after"),
                                  subject: "for bytes \(range.lowerBound)-\(range.upperBound - 1)", now: now) {
            case .retry(let failure, let retryAfter): return .retryable(failure, retryAfter: retryAfter)
            case let verdict: return .stop(verdict.failure ?? BatchFetchError(.httpStatus, "HTTP \(head.status)"))
            }
        }
    }

    /// How a range request ended, as its connection saw it once the sink drained.
    struct RangeEnd: Sendable, Equatable {
        /// The verdict on the head and its status; nil when no head arrived.
        var head: HeadVerdict?
        var status: Int?
        /// Where the range's bytes are written through.
        var written: Int64
        /// How the transfer ended (``AttemptState/end(_:expired:tooLong:writeFailed:)``).
        var failure: TransportFailure?
        /// The transfer was stopped for a full sink: its unwritten rest went back to the pool,
        /// which is no failure.
        var shed = false
        /// A write to the part failed: not the server's fault, no retry.
        var diskFailure: BatchFetchError?
        /// The job's deadline has passed.
        var pastDeadline = false
        /// Seconds left before the deadline, for the retry policy.
        var remaining: Double?
    }

    /// What the end of a request for `range` means: accept it, retry it, or stop segmenting
    /// (which also stops the other connections from claiming more). `recorded` is the failure
    /// to put in the attempt log, when there is one. Call after ``release(_:writtenThrough:)``.
    mutating func ended(_ range: Range<Int64>, _ end: RangeEnd) -> (verdict: Verdict, recorded: BatchFetchError?) {
        if let failure = end.diskFailure { return (stopping(failure), nil) }
        if end.pastDeadline { return (stopping(BatchFetchError(.deadlineExceeded, "job deadline exceeded")), nil) }
        switch end.head {
        case .stop(let failure)?:
            return (stopping(failure), failure)
        case .retryable(let failure, let retryAfter)?:
            return (failed(failure, retryAfter: retryAfter, remaining: end.remaining), failure)
        case .accept?:
            if end.shed || end.written >= range.upperBound { return (.accept, nil) }
        case nil:
            break
        }
        guard let transportFailure = end.failure, transportFailure != .overloaded else {
            let failure = BatchFetchError(
                .connection, "connection closed at \(end.written) of bytes \(range.lowerBound)-\(range.upperBound - 1)")
            return (failed(failure, remaining: end.remaining), failure)
        }
        switch AttemptVerdict(transportFailure, subject: "for bytes \(end.written)-\(range.upperBound - 1)") {
        case .retry(let failure, let retryAfter):
            return (failed(failure, retryAfter: retryAfter, remaining: end.remaining), failure)
        case .interrupted(let failure):
            // Cancelled by an interrupt, or by a stop another connection recorded.
            return (stopping(stopReason ?? failure), nil)
        case let verdict:
            return (stopping(verdict.failure!), nil)
        }
    }

    /// Stops segmenting with `failure` (the first reason stays) and says so.
    private mutating func stopping(_ failure: BatchFetchError) -> Verdict {
        stop(failure)
        return .stop(failure)
    }

    /// A range request failed in a way worth retrying (connection, timeout, a retryable status):
    /// retry after the job's retry policy's wait, or stop when it gives up (retries used up, a
    /// Retry-After over `retry_after_max`, a wait past the deadline `remaining` seconds away); the
    /// single stream that continues then fails over.
    mutating func failed(_ failure: BatchFetchError, retryAfter: Double? = nil, remaining: Double? = nil) -> Verdict {
        switch log.retry(after: failure, retryAfter: retryAfter, remaining: remaining, policy: configuration.retry) {
        case .wait(let delay):
            return .retry(failure, delay)
        case .giveUp(let reason):
            stop(reason)
            return .stop(reason)
        }
    }

    /// Ends segmenting: nothing more is handed out.
    mutating func stop(_ failure: BatchFetchError) {
        if stopReason == nil { stopReason = failure }
    }
}
