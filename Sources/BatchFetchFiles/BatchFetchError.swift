import Foundation

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
    /// A checksum file's signature did not verify with the manifest's key (tampered, wrong key,
    /// missing or malformed), or a job takes its digests from such a file (Docs/Signatures.md).
    case signatureInvalid = "signature_invalid"
    /// A piece of a file did not match its sha256 (`pieces:`): an attempt-log entry naming the
    /// mirror that served it and the piece; the piece is fetched again (Docs/Mirrors.md).
    case pieceMismatch = "piece_mismatch"
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
