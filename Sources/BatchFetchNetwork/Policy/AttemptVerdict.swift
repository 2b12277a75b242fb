import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// What the end of one attempt means for any request batchfetch sends — a download, a segment's
/// range, a mirror probe for `check` and `pin`, an upload: the attempt core's one decision table.
///
/// Each driver first handles its own special cases (206, 304 and 416 for downloads, 404 and a
/// refused HEAD for probes, a POST's answer for uploads) and asks this for everything else:
/// statuses through ``ResponseClass``, transport failures through ``init(_:subject:)``. The
/// driver then acts on the verdict with its ``AttemptLog``, which asks the job's
/// ``RetryPolicy`` how long to wait. So a new rule (a status worth retrying, a failure not worth
/// it) is one line here or in ``ResponseClass``, obeyed by `run`, segments, `check`, `pin` and
/// uploads, and tested without sockets (`AttemptVerdictTests`).
package enum AttemptVerdict: Sendable, Equatable {
    /// A 2xx answer: the driver takes it.
    case success
    /// A redirect: the driver asks its ``RedirectPolicy``.
    case redirect
    /// Worth asking again after the retry policy's wait (or the server's `Retry-After`).
    case retry(BatchFetchError, retryAfter: Double?)
    /// This mirror will not serve the request (a refused status, a TLS failure the next attempt
    /// would meet again): the next mirror, if any.
    case nextMirror(BatchFetchError)
    /// The run was interrupted: no retry, no other mirror.
    case interrupted(BatchFetchError)

    /// The verdict on a response status. `subject` says what was asked, for the message
    /// ("from <url>", "for bytes 0-9"; empty for nothing); `retryAfter` is the response's
    /// `Retry-After` header, read against `now`.
    package init(status: Int, retryAfter: String?, subject: String, now: Date = Date()) {
        switch ResponseClass(status: status) {
        case .success: self = .success
        case .redirect: self = .redirect
        case .retryable:
            self = .retry(BatchFetchError(.httpStatus, Self.phrase("HTTP \(status)", subject)),
                          retryAfter: ResponseHeaders.retryAfter(retryAfter, now: now))
        case .refused:
            self = .nextMirror(BatchFetchError(.httpStatus, Self.phrase("HTTP \(status)", subject)))
        }
    }

    /// The verdict on a transfer that ended with `failure`, before or during its body. A timeout
    /// or a broken connection is retried; a TLS failure moves to the next mirror; a cancel is the
    /// run's interruption. A transfer the transport shed for its own backlog
    /// (``TransportFailure/overloaded``) is retried here; a download, which shed it itself to
    /// let the disk catch up, handles that before asking.
    package init(_ failure: TransportFailure, subject: String) {
        switch failure {
        case .cancelled:
            self = .interrupted(BatchFetchError(.interrupted, "transfer cancelled"))
        case .timedOut:
            self = .retry(BatchFetchError(.timeout, Self.phrase("no data", subject) + " within the idle timeout"), retryAfter: nil)
        case .connection(let reason), .other(let reason):
            self = .retry(BatchFetchError(.connection, Self.phrase(subject, reason, separator: ": ")), retryAfter: nil)
        case .overloaded:
            self = .retry(BatchFetchError(.connection, Self.phrase(subject, "the transport shed the transfer", separator: ": ")),
                          retryAfter: nil)
        case .tls(let reason):
            self = .nextMirror(BatchFetchError(.tls, Self.phrase(subject, reason, separator: ": ")))
        }
    }

    /// The failure the verdict carries; nil for a success or a redirect.
    package var failure: BatchFetchError? {
        switch self {
        case .success, .redirect: return nil
        case .retry(let failure, _), .nextMirror(let failure), .interrupted(let failure): return failure
        }
    }

    /// `first` and `second` joined by `separator`, leaving out an empty one.
    private static func phrase(_ first: String, _ second: String, separator: String = " ") -> String {
        first.isEmpty ? second : second.isEmpty ? first : first + separator + second
    }
}
