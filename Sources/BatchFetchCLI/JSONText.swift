/// JSON text for values written by hand, where streaming matters more than `JSONEncoder`'s
/// convenience (`plan --format json` on large manifests (bench/results/history.md)).
enum JSONText {
    /// `text` as a JSON string literal (RFC 8259 escaping; `/` and non-ASCII left as they are).
    static func quoted(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return "\"" + text + "\""
        }
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    static func array(_ items: [String]) -> String {
        "[" + items.map(quoted).joined(separator: ", ") + "]"
    }

    /// An object from already-encoded values, keys sorted so output is stable.
    static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.sorted { $0.0 < $1.0 }.map { "\(quoted($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }
}
