import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// One request the engine made for a job, for the report.
public struct AttemptRecord: Sendable, Equatable {
    public var mirrorIndex: Int
    /// The URL asked, as it may be printed (a redirect target, or the redacted mirror URL).
    public var url: String
    public var httpStatus: Int?
    public var failure: BatchFetchError?
    /// Seconds waited before this attempt.
    public var waited: Double
    /// A bad piece this record is about (`piece_mismatch`): its index and bytes.
    public var piece: Piece?

    /// A piece of a file checked against its sha256 (Docs/Mirrors.md).
    public struct Piece: Sendable, Equatable {
        public var index: Int
        public var bytes: Range<Int64>

        public init(index: Int, bytes: Range<Int64>) {
            self.index = index
            self.bytes = bytes
        }
    }
}

/// A request the state machine wants sent.
package struct PlannedRequest: Sendable, Equatable {
    package var mirrorIndex: Int
    /// The resolved URL (the mirror's or a redirect target).
    package var url: URL
    package var rangeStart: Int64?
    /// Last byte wanted, for bounded ranges (large bodies without backpressure, pacing, segments).
    package var rangeEnd: Int64?
    package var ifRange: String?
    /// Validators of the file already at `dest` (`refresh: if-changed`): a conditional GET.
    package var ifNoneMatch: String?
    package var ifModifiedSince: String?

    package init(mirrorIndex: Int, url: URL, rangeStart: Int64? = nil, rangeEnd: Int64? = nil, ifRange: String? = nil) {
        self.mirrorIndex = mirrorIndex
        self.url = url
        self.rangeStart = rangeStart
        self.rangeEnd = rangeEnd
        self.ifRange = ifRange
    }

    /// The `Range` header value, if this is a range request.
    package var rangeHeader: String? {
        rangeStart.map { "bytes=\($0)-" + (rangeEnd.map(String.init) ?? "") }
    }
}

/// Where and how much of a response body to write.
package struct BodyPlan: Sendable, Equatable {
    /// Offset in `.part` of the body's first byte; the part is truncated to this first.
    package var offset: Int64
    /// Offset at which the body must end; bytes beyond it are cut off (`size_mismatch`).
    package var end: Int64?
    /// A new sidecar to write before the body (a fresh download), or nil to keep the current one.
    package var sidecar: Sidecar?

    package init(offset: Int64, end: Int64?, sidecar: Sidecar?) {
        self.offset = offset
        self.end = end
        self.sidecar = sidecar
    }
}

/// How long to wait before a retry; full jitter draws uniformly from 0 to `seconds`.
package struct RetryDelay: Sendable, Equatable {
    package var seconds: Double
    package var jitter: Bool

    package init(seconds: Double, jitter: Bool) {
        self.seconds = seconds
        self.jitter = jitter
    }

    /// Exponential backoff with full jitter after the `failure`-th failure (1-based):
    /// up to `base * 2^(failure-1)`, never more than `cap`.
    package static func backoff(failure: Int, base: Double, cap: Double) -> RetryDelay {
        RetryDelay(seconds: min(cap, base * pow(2, Double(failure - 1))), jitter: true)
    }

    /// The seconds to actually wait: drawn from 0...seconds with jitter, and a day at most, so a
    /// Retry-After of years (or a malformed one) cannot overflow the timers.
    package func draw() -> Double {
        let longest = min(max(0, seconds), 86_400)
        return jitter ? Double.random(in: 0...longest) : longest
    }
}
