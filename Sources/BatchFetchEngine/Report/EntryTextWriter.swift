import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchState
import Foundation

/// An object of a stable JSON file written directly, byte for byte what `JSONEncoder` with
/// ``StableJSON``'s style (sorted keys, pretty, slashes unescaped) prints for it as a value two
/// levels deep: fields at six spaces, nested elements at eight. The caller writes the opening
/// and closing braces and the fields in the order of their names.
///
/// Why: the report's job entries (``JobEntryText``) and the state cache's entries
/// (``StateCache/write(_:to:)``) are written once per file, and `JSONEncoder` with the
/// re-indenting was a large share of a batch of small files (bench/results/profile.md).
struct EntryTextWriter {
    var bytes: [UInt8] = []
    var fields = 0

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `"name" : `, after a comma when a field came before.
    mutating func key(_ name: StaticString) {
        raw(fields == 0 ? "\n      \"" : ",\n      \"")
        raw(name)
        raw("\" : ")
        fields += 1
    }

    /// `"name" : ` and an object or array (`open`, `close`) of `elements`, one a line (an
    /// empty one with a blank line, as the pretty encoder prints it).
    mutating func nested<Element>(_ name: StaticString, _ open: StaticString, _ close: StaticString,
                                  _ elements: [Element], _ write: (inout EntryTextWriter, Element) -> Void) {
        key(name)
        raw(open)
        for (position, element) in elements.enumerated() {
            raw(position == 0 ? "\n        " : ",\n        ")
            write(&self, element)
        }
        raw(elements.isEmpty ? "\n\n      " : "\n      ")
        raw(close)
    }

    mutating func field(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    /// An integer in decimal, as the encoder writes `Int`, `Int64` and `UInt64`.
    mutating func field<Integer: BinaryInteger>(_ name: StaticString, _ value: Integer?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A map of strings (digests by algorithm) as an object, its keys in order.
    mutating func field(_ name: StaticString, _ value: [String: String]?) {
        guard let value else { return }
        nested(name, "{", "}", value.sorted { $0.key < $1.key }) { text, entry in
            text.string(entry.key)
            text.raw(" : ")
            text.string(entry.value)
        }
    }

    mutating func field(_ name: StaticString, _ value: Bool?) {
        guard let value else { return }
        key(name)
        if value { raw("true") } else { raw("false") }
    }

    /// A number as the encoder writes it: Swift's shortest form without a trailing `.0`.
    mutating func field(_ name: StaticString, _ value: Double?) {
        guard let value else { return }
        key(name)
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`-style or `\u00xx`
    /// escapes, everything else (slashes, non-ASCII) as it is.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x08: raw("\\b")
            case 0x09: raw("\\t")
            case 0x0A: raw("\\n")
            case 0x0C: raw("\\f")
            case 0x0D: raw("\\r")
            case 0..<0x20:
                raw("\\u00")
                bytes.append(Digester.hexDigit(byte >> 4))
                bytes.append(Digester.hexDigit(byte & 0xF))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
