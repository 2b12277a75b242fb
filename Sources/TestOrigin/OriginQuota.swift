import Foundation

/// A request quota over all the origin's files, as APIs with rate limits keep one: at most
/// `limit` requests in each fixed window of `window` seconds (the first request after a window
/// ends starts the next); one more is answered `429` with `Retry-After`. Each answer says what is
/// left in the header style chosen, so a client that reads them never needs the 429
/// (``TestOrigin/refusedByQuota``).
public struct OriginQuota: Sendable {
    /// How the quota is announced.
    public enum Style: Sendable, CaseIterable {
        /// The IETF httpapi draft's current form: `RateLimit-Policy: "q";q=N;w=W`,
        /// `RateLimit: "q";r=R;t=T`.
        case current
        /// Its draft-07 form: `RateLimit-Policy: N;w=W`, `RateLimit: limit=N, remaining=R, reset=T`.
        case draft07
        /// `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` as epoch seconds
        /// (GitHub's form).
        case xRateLimitEpoch
        /// Not announced: the 429 is the only sign.
        case silent
    }

    public var limit: Int
    public var window: Int
    public var style: Style

    public init(limit: Int, window: Int, style: Style) {
        self.limit = limit
        self.window = window
        self.style = style
    }

    /// The quota's state: the current window and what it used.
    struct Usage {
        var windowStart: ContinuousClock.Instant?
        var used = 0
        var refused = 0

        /// Counts a request at `now`; returns whether it is within the quota and the headers that
        /// say what is left.
        mutating func admit(_ quota: OriginQuota, at now: ContinuousClock.Instant) -> (admitted: Bool, headers: [(String, String)]) {
            let window = Duration.seconds(quota.window)
            if windowStart.map({ now - $0 >= window }) ?? true {
                windowStart = now
                used = 0
            }
            let admitted = used < quota.limit
            if admitted { used += 1 } else { refused += 1 }
            let left = windowStart! + window - now
            // Whole seconds, rounded up: a client waiting this long finds the next window.
            let reset = Int((Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18).rounded(.up))
            let remaining = quota.limit - used
            var headers: [(String, String)]
            switch quota.style {
            case .current:
                headers = [("RateLimit-Policy", "\"q\";q=\(quota.limit);w=\(quota.window)"), ("RateLimit", "\"q\";r=\(remaining);t=\(reset)")]
            case .draft07:
                headers = [("RateLimit-Policy", "\(quota.limit);w=\(quota.window)"),
                           ("RateLimit", "limit=\(quota.limit), remaining=\(remaining), reset=\(reset)")]
            case .xRateLimitEpoch:
                let epoch = Int(Date().timeIntervalSince1970.rounded(.down)) + reset + 1
                headers = [("X-RateLimit-Limit", "\(quota.limit)"), ("X-RateLimit-Remaining", "\(remaining)"),
                           ("X-RateLimit-Reset", "\(epoch)")]
            case .silent:
                headers = []
            }
            if !admitted { headers.append(("Retry-After", "\(reset)")) }
            return (admitted, headers)
        }
    }
}
