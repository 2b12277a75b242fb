/// What a response status means for any request batchfetch sends — a download, a segment's
/// range, a mirror probe for `check` and `pin`, an upload: the one table of which answers are
/// worth asking again, read by ``AttemptVerdict`` (the attempt core), so a new retry rule is one
/// line here, obeyed by every command (`ResponseClassTests` and the drivers' tests show it).
package enum ResponseClass: Sendable, Equatable {
    /// 2xx: the answer the request asked for.
    case success
    /// 301, 302, 303, 307, 308: followed as ``RedirectPolicy`` allows.
    case redirect
    /// The same request may succeed later, after `Retry-After` or a backoff: 408 Request
    /// Timeout, 425 Too Early (RFC 8470: the server asks for the request again), 429 Too Many
    /// Requests and every 5xx.
    case retryable
    /// Any other status: this mirror will not serve the request.
    case refused

    package init(status: Int) {
        switch status {
        case 200...299: self = .success
        case 301, 302, 303, 307, 308: self = .redirect
        case 408, 425, 429, 500...599: self = .retryable
        default: self = .refused
        }
    }
}
