/// A manifest string after `${VAR}` / `${VAR:-default}` expansion that remembers which parts came
/// from the environment.
///
/// Tokens and passwords reach URLs and headers through environment variables; keeping the parts
/// apart lets every report, event and log print ``redacted`` (`${DATA_TOKEN}`) while only the
/// transport ever sees ``resolved``.
public struct TemplatedString: Hashable, Sendable {
    public enum Part: Hashable, Sendable {
        case literal(String)
        /// A value read from the environment variable `name`; secret.
        case environment(name: String, value: String)
    }

    /// The real value, for the network and the file system only.
    public let resolved: String
    /// What a value with parts from the environment has besides ``resolved``; nil when no part
    /// came from the environment (nearly every URL and dest of a large manifest), so such a
    /// value is 24 bytes instead of 40: each job holds two or more.
    private let templated: Templated?

    /// The value with every environment-derived part shown as `${NAME}`; safe to print.
    public var redacted: String { templated?.redacted ?? resolved }

    /// The parts that came from the environment, as `${NAME}` and value: what a ``Redactor``
    /// hides wherever it reappears (in a URL a server sent back, in an error message).
    public var secrets: [Secret] { templated?.secrets ?? [] }

    /// ``redacted`` and ``secrets`` of a value with parts from the environment.
    private final class Templated: Hashable, Sendable {
        let redacted: String
        let secrets: [Secret]

        init(redacted: String, secrets: [Secret]) {
            self.redacted = redacted
            self.secrets = secrets
        }

        static func == (left: Templated, right: Templated) -> Bool {
            left.redacted == right.redacted && left.secrets == right.secrets
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(redacted)
            hasher.combine(secrets)
        }
    }

    /// One value read from the environment.
    public struct Secret: Hashable, Sendable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(parts: [Part]) {
        var resolved = "", redacted = ""
        var secrets: [Secret] = []
        for part in parts {
            switch part {
            case .literal(let text):
                resolved += text
                redacted += text
            case .environment(let name, let value):
                resolved += value
                redacted += "${\(name)}"
                secrets.append(Secret(name: name, value: value))
            }
        }
        self.resolved = resolved
        templated = secrets.isEmpty ? nil : Templated(redacted: redacted, secrets: secrets)
    }

    /// This value with every `target` (literal text such as `{sha256}`) replaced by `value`,
    /// in what is sent and what is printed alike.
    public func replacing(_ target: String, with value: String) -> TemplatedString {
        TemplatedString(resolved: resolved.replacingOccurrences(of: target, with: value),
                        templated: templated.map {
                            Templated(redacted: $0.redacted.replacingOccurrences(of: target, with: value), secrets: $0.secrets)
                        })
    }

    private init(resolved: String, templated: Templated?) {
        self.resolved = resolved
        self.templated = templated
    }

    /// A value made from another by the same change to both its forms (a ping's URL with its
    /// event's suffix): the secrets stay known, so the result is redacted as the original was.
    package init(resolved: String, redacted: String, secrets: [Secret]) {
        self.init(resolved: resolved, templated: secrets.isEmpty ? nil : Templated(redacted: redacted, secrets: secrets))
    }

    public init(literal: String) {
        resolved = literal
        templated = nil
    }
}

/// Expands `${VAR}` and `${VAR:-default}` in manifest strings.
///
/// A `$` not followed by `{` is literal; `$${` writes a literal `${`. A default is manifest text,
/// not a secret. An unset variable without a default is an error, because silently fetching
/// `https:///file` or sending an empty token is worse than stopping.
package struct VariableExpander: Sendable {
    package var environment: [String: String]

    package init(environment: [String: String]) {
        self.environment = environment
    }

    package enum Failure: Error, Equatable {
        case unset(String)
        case malformed(String)
    }

    package func expand(_ text: String) -> Result<TemplatedString, Failure> {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return .success(TemplatedString(literal: text)) }
        var parts: [TemplatedString.Part] = []
        var literal = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            literal += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("${") {
                literal += "${"
                rest = after.dropFirst(2)
                continue
            }
            guard after.hasPrefix("{") else {
                literal += "$"
                rest = after
                continue
            }
            guard let close = after.firstIndex(of: "}") else {
                return .failure(.malformed("'${' without a closing '}'"))
            }
            let body = after[after.index(after: after.startIndex)..<close]
            let name: Substring
            let fallback: Substring?
            if let separator = body.range(of: ":-") {
                name = body[..<separator.lowerBound]
                fallback = body[separator.upperBound...]
            } else {
                name = body
                fallback = nil
            }
            guard Self.isValidName(name) else {
                return .failure(.malformed("'${\(body)}' is not a variable reference; names are [A-Za-z_][A-Za-z0-9_]*"))
            }
            if !literal.isEmpty {
                parts.append(.literal(literal))
                literal = ""
            }
            if let value = environment[String(name)], !(value.isEmpty && fallback != nil) {
                parts.append(.environment(name: String(name), value: value))
            } else if let fallback {
                parts.append(.literal(String(fallback)))
            } else {
                return .failure(.unset(String(name)))
            }
            rest = after[after.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        return .success(TemplatedString(parts: parts))
    }

    private static func isValidName(_ name: Substring) -> Bool {
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}
