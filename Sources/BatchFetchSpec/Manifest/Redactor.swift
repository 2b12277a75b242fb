import Foundation

/// Hides a job's environment values wherever they reappear, not only where the manifest put them.
///
/// ``TemplatedString/redacted`` covers the URLs and headers as written; but values come back in
/// text the manifest never held: a relative `Location` resolved against `https://u:${PW}@host/`,
/// a server that echoes the request URI (`?token=${TOKEN}`) in its redirect, an error message
/// quoting a URL. Every string bound for the report, events, JUnit or stderr passes through
/// ``redact(_:)``, which replaces each value (raw and percent-encoded) with `${NAME}`.
///
/// Values shorter than ``minimumLength`` characters are left alone in free text: replacing every
/// `1` or `on` would garble status codes and words, and a value that short protects nothing.
/// They are still hidden where the manifest templated them.
package struct Redactor: Sendable, Equatable {
    /// Each hidden text and what is shown instead, longest first so a value that contains
    /// another is replaced whole.
    private let replacements: [(hidden: String, shown: String)]

    package static let minimumLength = 4

    /// A redactor for the secrets of `strings` plus `extra` values (e.g. a `.netrc` password).
    package init(_ strings: [TemplatedString] = [], extra: [TemplatedString.Secret] = []) {
        var pairs: [String: String] = [:]
        for secret in strings.flatMap(\.secrets) + extra where secret.value.count >= Self.minimumLength {
            let shown = "${\(secret.name)}"
            for form in Self.forms(of: secret.value) where pairs[form] == nil {
                pairs[form] = shown
            }
        }
        replacements = pairs.map { (hidden: $0.key, shown: $0.value) }
            .sorted { $0.hidden.count != $1.hidden.count ? $0.hidden.count > $1.hidden.count : $0.hidden < $1.hidden }
    }

    package static func == (lhs: Redactor, rhs: Redactor) -> Bool {
        lhs.replacements.map(\.hidden) == rhs.replacements.map(\.hidden)
            && lhs.replacements.map(\.shown) == rhs.replacements.map(\.shown)
    }

    /// `text` with every secret replaced.
    package func redact(_ text: String) -> String {
        var result = text
        for (hidden, shown) in replacements where result.contains(hidden) {
            result = result.replacingOccurrences(of: hidden, with: shown)
        }
        return result
    }

    /// The value as it may appear in a URL: raw, and percent-encoded as a query, a path, a
    /// password or fully (upper- and lowercase hex).
    private static func forms(of value: String) -> Set<String> {
        var forms: Set<String> = [value]
        let sets: [CharacterSet] = [.urlQueryAllowed, .urlPathAllowed, .urlPasswordAllowed, .urlUserAllowed, .alphanumerics]
        for set in sets {
            if let encoded = value.addingPercentEncoding(withAllowedCharacters: set) {
                forms.insert(encoded)
                forms.insert(lowercasedEscapes(encoded))
            }
        }
        return forms
    }

    /// `%2F` written as `%2f`, as some servers do.
    private static func lowercasedEscapes(_ text: String) -> String {
        var result = ""
        var pending = 0
        for character in text {
            if character == "%" {
                pending = 2
                result.append(character)
            } else if pending > 0 {
                pending -= 1
                result.append(contentsOf: character.lowercased())
            } else {
                result.append(character)
            }
        }
        return result
    }
}

extension Job {
    /// A redactor for every environment value the job uses (URLs, dest, headers, body), and
    /// `extra` secrets from elsewhere.
    package func redactor(extra: [TemplatedString.Secret] = []) -> Redactor {
        // Nearly every job has no environment value: no arrays are gathered for those.
        let templated = urls.contains { !$0.secrets.isEmpty } || !dest.secrets.isEmpty
            || headers.contains { !$0.value.secrets.isEmpty } || body?.secrets.isEmpty == false
        guard templated || !extra.isEmpty else { return Redactor() }
        return Redactor(urls + [dest] + headers.map(\.value) + (body.map { [$0] } ?? []), extra: extra)
    }
}
