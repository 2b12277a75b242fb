@testable import BatchFetchSpec
import Testing

/// The csv/tsv tokenizer: RFC 4180 quoting, line breaks of every kind, where each field starts,
/// and records that may continue past the bytes read so far.
@Suite struct DelimitedRecordsTests {
    private let csv = DelimitedRecords(delimiter: UInt8(ascii: ","), file: 2)

    private func records(_ text: String, atEnd: Bool = true) -> [DelimitedRecords.Record] {
        var bytes = Array(text.utf8)[...]
        var line = 1
        var found: [DelimitedRecords.Record] = []
        while let record = bytes.withUnsafeBufferPointer({ csv.record(in: $0, line: line, atEnd: atEnd) }) {
            found.append(record)
            bytes = bytes.dropFirst(record.length)
            line = record.nextLine
        }
        return found
    }

    private func texts(_ text: String) -> [[String]] {
        records(text).map { $0.fields.map(\.text) }
    }

    @Test func quotedFieldsHoldDelimitersLineBreaksAndDoubledQuotes() {
        #expect(texts("url,caption\r\nhttps://h/a,\"one, \"\"two\"\"\r\nthree\"\nhttps://h/b,\n") == [
            ["url", "caption"], ["https://h/a", "one, \"two\"\r\nthree"], ["https://h/b", ""],
        ])
    }

    @Test func everyLineBreakEndsARecordAndTheLastNeedsNone() {
        #expect(texts("a\rb\r\nc\nd") == [["a"], ["b"], ["c"], ["d"]])
        #expect(records("a\rb\r\nc\nd").map(\.nextLine) == [2, 3, 4, 5])
    }

    @Test func fieldsAreLocatedByLineAndCharacterColumn() {
        // "é" is two bytes and one column; the second record starts on line 3 because the first
        // holds a line break in quotes.
        let found = records("é,\"x\ny\",z\nlast,b\n")
        #expect(found[0].fields.map(\.location) == [
            SourceLocation(line: 1, column: 1, file: 2), SourceLocation(line: 1, column: 3, file: 2),
            SourceLocation(line: 2, column: 4, file: 2),
        ])
        #expect(found[1].fields.map(\.location) == [SourceLocation(line: 3, column: 1, file: 2), SourceLocation(line: 3, column: 6, file: 2)])
    }

    @Test func aRecordThatMayGoOnIsNotReturnedBeforeTheEnd() {
        // Cut inside a quoted field, after a quote that a second one may follow, inside a CRLF,
        // and in an unquoted last field: each needs more bytes.
        for text in ["a,\"b", "a,\"b\"", "a,b\r", "a,b"] {
            #expect(records(text, atEnd: false).isEmpty, "\(text.debugDescription)")
        }
        #expect(texts("a,\"b\"\"\"\n") == [["a", "b\""]])
        #expect(records("a,b\nc", atEnd: false).map { $0.fields.map(\.text) } == [["a", "b"]])
    }

    @Test func strayQuotesAndUnclosedQuotesAreProblemsAtTheirColumn() {
        let stray = records("u,x\"y\n")
        #expect(stray[0].problem?.location == SourceLocation(line: 1, column: 4, file: 2))
        #expect(stray[0].problem?.message.contains("a quote inside a field that does not start with one") == true)

        let trailing = records("\"ab\"c,d\n")
        #expect(trailing[0].problem?.location == SourceLocation(line: 1, column: 5, file: 2))
        #expect(trailing[0].fields.map(\.text) == ["ab", "d"])

        let unclosed = records("a\nb,\"never closed\nc,d\n")
        #expect(unclosed.count == 2)
        #expect(unclosed[1].problem?.location == SourceLocation(line: 2, column: 3, file: 2))
        #expect(unclosed[1].problem?.message == "the quote that opens this field is never closed")
    }

    @Test func invalidUTF8IsAProblem() {
        var bytes: [UInt8] = Array("ok,".utf8) + [0xFF, 0xFE] + Array("\n".utf8)
        let record = bytes.withUnsafeMutableBufferPointer { csv.record(in: UnsafeBufferPointer($0), line: 1, atEnd: true) }
        #expect(record?.problem?.message == "the field is not valid UTF-8")
        #expect(record?.problem?.location.column == 4)
    }
}
