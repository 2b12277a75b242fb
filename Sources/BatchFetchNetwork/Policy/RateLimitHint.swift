import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import RawStructuredFieldValues

/// What a response says about the server's request quota: how many requests are left and how
/// long until the quota resets, read from the rate-limit headers servers send before they have
/// to answer 429.
///
/// Zenodo, Hugging Face and GitHub send these; none of curl, aria2, wget or rclone reads them.
/// Read, in this order (the first one present wins):
/// - the IETF httpapi draft's current form, structured-field lists (RFC 9651):
///   `RateLimit: "default";r=50;t=30` with `RateLimit-Policy: "default";q=100;w=60`;
/// - its draft-07 form: `RateLimit: limit=100, remaining=50, reset=30` (a dictionary) with
///   `RateLimit-Policy: 100;w=60`, and the older separate `RateLimit-Remaining`/`-Reset`;
/// - `X-RateLimit-Remaining` with `X-RateLimit-Reset`, the reset in epoch seconds when above
///   10^9 (GitHub) and as a delay otherwise.
/// A reset that is missing is taken from the policy's window (`w`). Structured fields are parsed
/// by swift-http-structured-headers, not by hand. Pure; ``ServerPace`` acts on it.
package struct RateLimitHint: Sendable, Equatable {
    /// Requests the server will still accept before the reset.
    package var remaining: Int
    /// Seconds until the quota is whole again.
    package var reset: Double

    /// The hint in `head`'s headers at `now`, or nil when it gives none (or none that is whole).
    package init?(_ head: TransportResponseHead, now: Date) {
        let window = Self.policyWindow(head.header("ratelimit-policy"))
        if let value = head.header("ratelimit"),
           let found = Self.currentForm(value, window: window) ?? Self.draft07Form(value, window: window) {
            self = found
        } else if let remaining = head.header("ratelimit-remaining").flatMap(Self.count),
                  let reset = head.header("ratelimit-reset").flatMap(Self.delay) ?? window {
            self.init(remaining: remaining, reset: reset)
        } else if let remaining = head.header("x-ratelimit-remaining").flatMap(Self.count),
                  let reset = head.header("x-ratelimit-reset").flatMap({ Self.resetTime($0, now: now) }) ?? window {
            self.init(remaining: remaining, reset: reset)
        } else {
            return nil
        }
    }

    package init(remaining: Int, reset: Double) {
        self.remaining = remaining
        self.reset = reset
    }

    /// `"policy";r=N;t=S` items; of several policies, the one with the fewest requests left.
    private static func currentForm(_ value: String, window: Double?) -> RateLimitHint? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let members = try? parser.parseListFieldValue() else { return nil }
        var hints: [RateLimitHint] = []
        for case .item(let item) in members {
            let parameters = item.rfc9651Parameters
            guard case .integer(let remaining)? = parameters["r"], remaining >= 0 else { continue }
            var reset = window
            if case .integer(let seconds)? = parameters["t"], seconds >= 0 { reset = Double(seconds) }
            if let reset { hints.append(RateLimitHint(remaining: Int(clamping: remaining), reset: reset)) }
        }
        return hints.min { ($0.remaining, -$0.reset) < ($1.remaining, -$1.reset) }
    }

    /// `limit=N, remaining=N, reset=S`, a structured dictionary.
    private static func draft07Form(_ value: String, window: Double?) -> RateLimitHint? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue(),
              case .item(let remainingItem)? = dictionary["remaining"],
              case .integer(let remaining) = remainingItem.rfc9651BareItem, remaining >= 0
        else { return nil }
        var reset = window
        if case .item(let resetItem)? = dictionary["reset"], case .integer(let seconds) = resetItem.rfc9651BareItem, seconds >= 0 {
            reset = Double(seconds)
        }
        return reset.map { RateLimitHint(remaining: Int(clamping: remaining), reset: $0) }
    }

    /// The window of the first policy: `w` of `100;w=60` (draft-07) or `"p";q=100;w=60`.
    private static func policyWindow(_ value: String?) -> Double? {
        guard let value else { return nil }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let members = try? parser.parseListFieldValue() else { return nil }
        for case .item(let item) in members {
            if case .integer(let seconds)? = item.rfc9651Parameters["w"], seconds > 0 { return Double(seconds) }
        }
        return nil
    }

    private static func count(_ text: String) -> Int? {
        Int(text.trimmingCharacters(in: .whitespaces)).flatMap { $0 >= 0 ? $0 : nil }
    }

    private static func delay(_ text: String) -> Double? {
        Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0 >= 0 && $0.isFinite ? $0 : nil }
    }

    /// `X-RateLimit-Reset`: epoch seconds above 10^9 (GitHub), a delay below.
    private static func resetTime(_ text: String, now: Date) -> Double? {
        guard let value = delay(text) else { return nil }
        return value > 1_000_000_000 ? max(0, value - now.timeIntervalSince1970) : value
    }
}
