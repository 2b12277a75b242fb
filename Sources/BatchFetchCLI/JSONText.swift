import BatchFetchSpec

/// JSON text for values written by hand, where streaming matters more than `JSONEncoder`'s
/// convenience (`plan --format json` on large manifests (bench/results/history.md)).
enum JSONText {
    /// `text` as a JSON string literal (``QuotedText``: RFC 8259 escaping; `/` and printable
    /// non-ASCII left as they are).
    static func quoted(_ text: String) -> String {
        QuotedText.quoted(text)
    }

    static func array(_ items: [String]) -> String {
        "[" + items.map(quoted).joined(separator: ", ") + "]"
    }

    /// An object from already-encoded values, keys sorted so output is stable.
    static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.sorted { $0.0 < $1.0 }.map { "\(quoted($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }
}
