/// Finds where a byte buffer stops being UTF-8, so the error can point at the offending byte.
///
/// Swift's own validating initialisers only say yes or no; the manifest error needs a line and
/// column.
enum UTF8Check {
    /// How many bytes from `start` on are ASCII, counted eight at a time: manifests are mostly
    /// ASCII, and a byte at a time took a fifth of a second for a million jobs.
    private static func asciiRun(in bytes: [UInt8], from start: Int) -> Int {
        bytes.withUnsafeBytes { raw in
            var index = start
            while index + 8 <= raw.count && raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
            }
            return index - start
        }
    }

    /// Offset of the first byte that does not belong to a well-formed UTF-8 sequence, if any.
    static func firstInvalidByte(in bytes: [UInt8]) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1 + asciiRun(in: bytes, from: index + 1)
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return index
            }
            guard index + length <= count else { return index }
            let second = bytes[index + 1]
            if second < low || second > high { return index }
            for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 {
                return index
            }
            index += length
        }
        return nil
    }

    /// 1-based line and column (in characters) of a byte offset.
    static func location(ofByteOffset offset: Int, in bytes: [UInt8]) -> SourceLocation {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return SourceLocation(line: line, column: column)
    }
}
