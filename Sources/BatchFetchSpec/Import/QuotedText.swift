/// A string as a double-quoted literal that is valid both as JSON (RFC 8259) and as a YAML
/// double-quoted scalar: `"` and `\` escaped, line feed and tab as `\n` and `\t`, and every
/// character YAML does not allow raw in a stream (C0 and C1 controls, DEL, the line and
/// paragraph separators, a BOM) as `\uXXXX`. One function for `plan --format json` and for the
/// manifests `import` and `add` write.
package enum QuotedText {
    package static func quoted(_ text: String) -> String {
        // Most strings (paths, URLs, ids) need no escape: no scalar by scalar copy for them.
        guard text.unicodeScalars.contains(where: needsEscape) else { return "\"" + text + "\"" }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || value == 0x22 || value == 0x5C || (0x7F..<0xA0).contains(value)
            || value == 0x2028 || value == 0x2029 || value == 0xFEFF
    }
}
