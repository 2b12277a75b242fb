import Foundation

/// The sidecar `<dest>.part.json`: which remote content the bytes in `<dest>.part` belong to.
///
/// The resolved URL may carry a token, so the sidecar holds its redacted form for people and its
/// sha256 for matching.
package struct Sidecar: Codable, Sendable, Equatable {
    package var version = 1
    package var url: String
    package var urlSHA256: String
    package var etag: String?
    package var lastModified: String?
    package var totalSize: Int64?
    /// For a segmented download, the byte ranges of `.part` already written (the file itself is
    /// preallocated to the total size); nil for a single stream, whose file size is its progress.
    package var rangesDone: ByteRanges?
    /// The inode of the part this sidecar describes, recorded when it is written
    /// (``PartialFiles/writeSidecar(_:)``): a later run resumes only the same file. Why: the
    /// name `<dest>.part` can come to lead to another file — one renamed over it by another
    /// process mid-run (the job then fails `in_use` and leaves the name to it) — and resuming
    /// that file's bytes under this sidecar's validators would publish a mix of the two. Nil in
    /// sidecars of earlier versions, which are trusted as before.
    package var partInode: UInt64?

    package init(url: String, urlSHA256: String, etag: String?, lastModified: String?, totalSize: Int64?,
                rangesDone: ByteRanges? = nil) {
        self.url = url
        self.urlSHA256 = urlSHA256
        self.etag = etag
        self.lastModified = lastModified
        self.totalSize = totalSize
        self.rangesDone = rangesDone
    }

    enum CodingKeys: String, CodingKey {
        case version, url, urlSHA256 = "url_sha256", etag, lastModified = "last_modified", totalSize = "total_size"
        case rangesDone = "ranges_done", partInode = "part_inode"
    }

    /// What `If-Range` carries: the strong ETag, else Last-Modified.
    package var ifRangeValue: String? { etag ?? lastModified }
}

/// What is on disk for a job when it starts.
package struct LocalPartial: Sendable, Equatable {
    /// How many bytes from the start of `<dest>.part` are written: its size for a single stream,
    /// the written prefix for a segmented one.
    package var bytes: Int64
    package var sidecar: Sidecar?

    package init(bytes: Int64, sidecar: Sidecar?) {
        self.bytes = bytes
        self.sidecar = sidecar
    }

    /// A partial from a segmented download: `fileSize` is the preallocated size, and only the
    /// ranges the sidecar lists (and the file holds) count.
    package init(fileSize: Int64, sidecar: Sidecar?) {
        if let done = sidecar?.rangesDone {
            var sidecar = sidecar
            sidecar?.rangesDone = done.clipped(to: fileSize)
            self.init(bytes: sidecar?.rangesDone?.prefix ?? 0, sidecar: sidecar)
        } else {
            self.init(bytes: fileSize, sidecar: sidecar)
        }
    }

    /// Bytes written anywhere in the part, for a segmented partial.
    package var segmentedBytes: Int64 { sidecar?.rangesDone?.count ?? bytes }
}

/// The closed set of failure causes in reports (`schemas/report.schema.json`).
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case httpStatus = "http_status"
    case checksumMismatch = "checksum_mismatch"
    case sizeMismatch = "size_mismatch"
    case timeout
    case deadlineExceeded = "deadline_exceeded"
    case connection
    case rangeNotHonoured = "range_not_honoured"
    case remoteChanged = "remote_changed"
    case diskFull = "disk_full"
    case permissionDenied = "permission_denied"
    case ioError = "io_error"
    case redirectRefused = "redirect_refused"
    case tooManyRedirects = "too_many_redirects"
    case checksumUnavailable = "checksum_unavailable"
    case lockMismatch = "lock_mismatch"
    case interrupted
    /// A symlink (or a non-directory) where the dest's path needs a directory or a file: the
    /// run refuses to write through it.
    case unsafePath = "unsafe_path"
    /// Another process holds the lock on the dest's partial.
    case inUse = "in_use"
    /// The TLS handshake failed: the server's certificate is untrusted, expired or for another
    /// host, or it refused the client certificate. Not retried.
    case tls
    /// An upload's file changed while it was being sent: the bytes sent are not the ones whose
    /// digest was announced.
    case sourceChanged = "source_changed"
    /// An archive entry that would land outside `extract.into` (`..`, an absolute path, a link
    /// leading out), or a device, FIFO or socket: the job fails naming the entry, and nothing
    /// of the archive is published at `into`.
    case unsafeArchive = "unsafe_archive"
    /// An archive that writes more bytes or entries than `max_size`/`max_entries` allow,
    /// stopped when it crossed the cap.
    case archiveTooLarge = "archive_too_large"
    /// An archive libarchive cannot read: corrupt, truncated, or not the `format` named.
    case archiveInvalid = "archive_invalid"
    /// A source could not be listed: the repository's API answered with an error or with what
    /// is not a listing, or an external resolver failed, hung or printed garbage (Docs/Sources.md).
    case resolverFailed = "resolver_failed"
    /// A DOI that lands on no repository batchfetch reads (the message names where it landed).
    case unsupportedDOI = "unsupported_doi"
    /// An HTML page where a file was expected and no checksum pins the content (a file host's
    /// quota or virus-scan page); `accept_html: true` allows it.
    case unexpectedHTML = "unexpected_html"
}

/// What went wrong, anywhere in batchfetch — a download, an upload, a listing, an archive, the
/// run lock — as a code from the closed set (the report's `error.code`) and a message for
/// people. One type for every subsystem, named for what it is rather than for the first
/// subsystem that had it.
public struct BatchFetchError: Error, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// The name this type had before every subsystem used it.
@available(*, deprecated, renamed: "BatchFetchError")
package typealias DownloadFailure = BatchFetchError

extension BatchFetchError: LocalizedError {
    /// The message with its code, for people (`localizedDescription`).
    public var errorDescription: String? { "\(message) (\(code.rawValue))" }
}

/// One request the engine made for a job, for the report.
public struct AttemptRecord: Sendable, Equatable {
    public var mirrorIndex: Int
    /// The URL asked, as it may be printed (a redirect target, or the redacted mirror URL).
    public var url: String
    public var httpStatus: Int?
    public var failure: BatchFetchError?
    /// Seconds waited before this attempt.
    public var waited: Double
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
