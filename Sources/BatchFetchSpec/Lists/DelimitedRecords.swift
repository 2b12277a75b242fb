/// Splits CSV and TSV text into records and fields, with the line and column of every field.
///
/// RFC 4180 with the liberties real exports take: fields are separated by `delimiter`; a field
/// that starts with `"` is quoted and may hold delimiters, line breaks and doubled quotes; lines
/// end with `\n`, `\r\n` or a lone `\r`. Written here rather than taken from a package because
/// neither CSV parser on this machine's package list (swiftcsv/SwiftCSV 0.10, yaslab/CSV.swift
/// 2.5) says where a field is, which every diagnostic needs, and CSV.swift accepts a stray quote
/// silently (Docs/JobLists.md, "Why our own tokenizer").
///
/// Pure: it reads a buffer and returns what it found. The caller (``ListRows``) feeds the file
/// in chunks and asks again with more bytes when a record may continue past the buffer's end.
struct DelimitedRecords {
    /// One field: its text (quotes removed, doubled quotes made single) and where it starts.
    struct Field {
        var text: String
        var location: SourceLocation
    }

    /// A record found at the start of the buffer.
    struct Record {
        var fields: [Field]
        /// Bytes consumed, through the line break that ends the record.
        var length: Int
        /// The line the next record starts on.
        var nextLine: Int
        /// What is wrong with the record, if anything; its fields are then not to be trusted.
        var problem: (location: SourceLocation, message: String)?
    }

    let delimiter: UInt8
    /// Which file locations name (``SourceLocation/file``).
    let file: Int

    private static let quote = UInt8(ascii: "\"")
    private static let newline = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")

    /// The record at the start of `bytes`, which begins at `line`, column 1; nil when the
    /// record may go on past the end of `bytes` and `atEnd` is false (ask again with more).
    /// An empty buffer at the end has no record either.
    func record(in bytes: UnsafeBufferPointer<UInt8>, line startLine: Int, atEnd: Bool) -> Record? {
        guard !bytes.isEmpty else { return nil }
        var fields: [Field] = []
        var index = 0
        var line = startLine
        var lineStart = 0  // offset of the current line's first byte
        var problem: (location: SourceLocation, message: String)?
        let count = bytes.count

        func location(_ offset: Int) -> SourceLocation {
            SourceLocation(line: line, column: Self.column(of: offset, lineStart: lineStart, in: bytes), file: file)
        }
        func report(_ message: String, at offset: Int) {
            report(message, at: location(offset))
        }
        func report(_ message: String, at location: SourceLocation) {
            if problem == nil { problem = (location, message) }
        }
        /// Past a line break at `index` (`\n`, `\r\n`, `\r`); nil when `\r` is the buffer's last byte.
        func afterBreak(_ index: Int) -> Int? {
            if bytes[index] == Self.carriageReturn {
                if index + 1 < count { return bytes[index + 1] == Self.newline ? index + 2 : index + 1 }
                return atEnd ? index + 1 : nil
            }
            return index + 1
        }

        while true {
            let fieldStart = index
            let fieldLocation = location(fieldStart)
            var text: String
            if index < count && bytes[index] == Self.quote {
                // Quoted: up to the quote not followed by another quote.
                var value: [UInt8] = []
                index += 1
                var closed = false
                while index < count {
                    let byte = bytes[index]
                    if byte == Self.quote {
                        if index + 1 < count && bytes[index + 1] == Self.quote {
                            value.append(Self.quote)
                            index += 2
                            continue
                        }
                        if index + 1 == count && !atEnd { return nil }  // a doubled quote may follow
                        index += 1
                        closed = true
                        break
                    }
                    if byte == Self.newline || byte == Self.carriageReturn {
                        guard let next = afterBreak(index) else { return nil }
                        value.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<next]))
                        index = next
                        line += 1
                        lineStart = index
                        continue
                    }
                    value.append(byte)
                    index += 1
                }
                if !closed {
                    guard atEnd else { return nil }
                    report("the quote that opens this field is never closed", at: fieldLocation)
                }
                if let valid = Self.string(value) {
                    text = valid
                } else {
                    text = ""
                    report("the field is not valid UTF-8", at: fieldLocation)
                }
                if closed && index < count && bytes[index] != delimiter && bytes[index] != Self.newline
                    && bytes[index] != Self.carriageReturn {
                    report("text after the closing quote of a field; a quote inside a quoted field is written twice (\"\")",
                           at: index)
                    while index < count && bytes[index] != delimiter && bytes[index] != Self.newline
                        && bytes[index] != Self.carriageReturn { index += 1 }
                }
            } else {
                while index < count && bytes[index] != delimiter && bytes[index] != Self.newline
                    && bytes[index] != Self.carriageReturn {
                    if bytes[index] == Self.quote {
                        report("a quote inside a field that does not start with one; quote the whole field "
                            + "and write the quote twice (\"\")", at: index)
                    }
                    index += 1
                }
                if index == count && !atEnd { return nil }
                let raw = UnsafeBufferPointer(rebasing: bytes[fieldStart..<index])
                if let value = Self.string(raw) {
                    text = value
                } else {
                    text = ""
                    report("the field is not valid UTF-8", at: fieldStart)
                }
            }
            fields.append(Field(text: text, location: fieldLocation))
            if index < count && bytes[index] == delimiter {
                index += 1
                continue
            }
            if index == count {
                guard atEnd else { return nil }
                return Record(fields: fields, length: index, nextLine: line + 1, problem: problem)
            }
            guard let next = afterBreak(index) else { return nil }
            return Record(fields: fields, length: next, nextLine: line + 1, problem: problem)
        }
    }

    /// UTF-8 text, or nil when the bytes are not UTF-8.
    private static func string(_ bytes: some Collection<UInt8>) -> String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// The 1-based column of `offset`, counted in characters as editors count them (UTF-8
    /// continuation bytes do not start one).
    static func column(of offset: Int, lineStart: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var column = 1
        var index = lineStart
        while index < offset {
            if bytes[index] & 0xC0 != 0x80 { column += 1 }
            index += 1
        }
        return column
    }
}
