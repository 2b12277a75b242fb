import Foundation

/// What one mirror showed when asked (``MirrorProbe``).
package struct MirrorObservation: Sendable, Equatable {
    package enum Outcome: Sendable, Equatable {
        /// A usable answer (200, 206, or HEAD 2xx).
        case answered
        /// 404 or 410.
        case missing
        /// No usable answer after the retries (connection errors, timeouts, 5xx, other codes).
        case unreachable(String)
    }

    package var outcome: Outcome
    package var httpStatus: Int?
    /// `HEAD`, or `GET` with `Range: bytes=0-0` when HEAD was refused, or `GET` for --deep.
    package var method: String
    package var size: Int64?
    package var etag: String?
    package var lastModified: String?
    /// sha256 of the whole representation: from `Repr-Digest` (or `Content-Digest` on a full
    /// response), or computed over the whole body with --deep.
    package var sha256: String?
    /// Whether `sha256` was computed over the bytes (--deep) rather than announced.
    package var hashed = false

    package init(outcome: Outcome, httpStatus: Int?, method: String, size: Int64? = nil, etag: String? = nil,
                lastModified: String? = nil, sha256: String? = nil, hashed: Bool = false) {
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.method = method
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
        self.sha256 = sha256
        self.hashed = hashed
    }
}
