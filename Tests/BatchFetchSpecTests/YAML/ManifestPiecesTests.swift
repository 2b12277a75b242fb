@testable import BatchFetchSpec
import Foundation
import Testing

/// Where a manifest may be cut for parsing on several cores, and where it may not.
@Suite struct ManifestPiecesTests {
    private func pieces(_ text: String, count: Int) -> ManifestPieces? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { ManifestPieces.find(in: $0, count: count) }
    }

    private func items(_ count: Int, indent: String = "  ") -> String {
        (0..<count).map { "\(indent)- id: j\($0)\n\(indent)  url: https://h.example/\($0)\n" }.joined()
    }

    @Test func cutsAtItemLinesCoveringEverythingAfterTheHeader() throws {
        let header = "version: 1\ndefaults: &d {retries: 2}\njobs:   # the list\n"
        let text = header + items(12)
        let found = try #require(pieces(text, count: 3))
        let bytes = Array(text.utf8)
        #expect(found.headerEnd == header.utf8.count)
        #expect(found.headerLines == 3)
        #expect(found.parts.count == 3)
        #expect(found.parts.first?.range.lowerBound == found.headerEnd)
        #expect(found.parts.last?.range.upperBound == bytes.count)
        for (part, next) in zip(found.parts, found.parts.dropFirst()) {
            #expect(part.range.upperBound == next.range.lowerBound)
            #expect(bytes[next.range].starts(with: Array("  - id: j".utf8)))
            // The line number is the file's: one more than the newlines before the cut.
            #expect(next.firstLine == bytes[..<next.range.lowerBound].filter { $0 == UInt8(ascii: "\n") }.count + 1)
        }
        #expect(found.parts[0].firstLine == 4)
    }

    @Test func itemsInColumnZeroAndCommentsBetweenThem() throws {
        let text = "version: 1\njobs:\n\n# first\n" + items(3, indent: "") + "# a comment in column 0\n\n" + items(3, indent: "")
        let found = try #require(pieces(text, count: 2))
        let bytes = Array(text.utf8)
        #expect(bytes[found.parts[1].range].starts(with: Array("- id: j".utf8)))
    }

    @Test func deeperDashesAreNotCuts() throws {
        let job = "  - id: a\n    urls:\n      - https://h.example/1\n      - https://h.example/2\n"
        let text = "version: 1\njobs:\n" + String(repeating: job, count: 8)
        let found = try #require(pieces(text, count: 4))
        let bytes = Array(text.utf8)
        for part in found.parts.dropFirst() {
            #expect(bytes[part.range].starts(with: Array("  - id: a".utf8)))
        }
    }

    @Test(arguments: [
        ("a key after jobs", "version: 1\njobs:\n  - id: a\n  - id: b\n  - id: c\ndefaults: {}\n"),
        ("a second document", "version: 1\njobs:\n  - id: a\n  - id: b\n---\n  - id: c\n"),
        ("a flow list", "version: 1\njobs: [{id: a}, {id: b}, {id: c}]\n"),
        ("a quoted key", "version: 1\n\"jobs\":\n  - id: a\n  - id: b\n  - id: c\n"),
        ("an anchored list", "version: 1\njobs: &all\n  - id: a\n  - id: b\n  - id: c\n"),
        ("a mapping under jobs", "version: 1\njobs:\n  a: 1\n  - id: b\n  - id: c\n"),
        ("a tab in column 0", "version: 1\njobs:\n  - id: a\n\t- id: b\n  - id: c\n"),
        ("one item", "version: 1\njobs:\n  - id: a\n    url: x\n"),
        ("a lone carriage return", "version: 1\njobs:\n  - id: a\r  - id: b\n  - id: c\n"),
        ("a next-line character", "version: 1\njobs:\n  - id: a\u{85}  - id: b\n  - id: c\n"),
        ("a line separator", "version: 1\njobs:\n  - id: a\u{2028}  - id: b\n  - id: c\n"),
        ("no jobs", "version: 1\noutput_dir: x\n"),
    ])
    func findsNoCut(what: String, text: String) {
        #expect(pieces(text, count: 2) == nil, "\(what)")
    }

    @Test func windowsLineEndingsAreCut() throws {
        let text = ("version: 1\njobs:\n" + items(6)).replacingOccurrences(of: "\n", with: "\r\n")
        let found = try #require(pieces(text, count: 2))
        #expect(found.headerLines == 2)
        #expect(Array(text.utf8)[found.parts[1].range].starts(with: Array("  - id: j".utf8)))
    }

    @Test func oneCoreGetsOnePiece() {
        #expect(pieces("version: 1\njobs:\n" + items(10), count: 1) == nil)
    }
}
