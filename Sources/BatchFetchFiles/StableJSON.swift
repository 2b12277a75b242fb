import Foundation

/// The one JSON style of every file and output batchfetch writes (reports, sidecars,
/// `validate --format json`): sorted keys and indentation, so the same facts give the same bytes
/// and files diff cleanly.
package enum StableJSON {
    package static func encode(_ value: some Encodable) throws -> Data {
        try prettyEncoder().encode(value)
    }

    /// The encoder of ``encode(_:)``, to reuse for many values.
    package static func prettyEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `encoded` (a pretty encoding) as it prints nested `depth` levels deep: every line after
    /// the first, unless empty, indented by two spaces per level (the pretty encoder leaves the
    /// blank line of an empty array or object unindented); the first line too when
    /// `indentFirstLine`, for an array element, not for an object's value. For files written a
    /// piece at a time (``ReportText``, ``StateCache``), byte for byte the encoding of the whole.
    package static func indented(_ encoded: Data, depth: Int, indentFirstLine: Bool) -> [UInt8] {
        let indent = [UInt8](repeating: UInt8(ascii: " "), count: 2 * depth)
        var text = [UInt8]()
        text.reserveCapacity(encoded.count + encoded.count / 8)
        var lineStart = indentFirstLine
        for byte in encoded {
            if lineStart && byte != UInt8(ascii: "\n") { text.append(contentsOf: indent) }
            text.append(byte)
            lineStart = byte == UInt8(ascii: "\n")
        }
        return text
    }

    /// One line, keys sorted: for NDJSON (`run --events`).
    package static func line(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
