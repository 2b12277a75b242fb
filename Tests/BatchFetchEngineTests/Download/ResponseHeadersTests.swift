@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// Header values as the download decisions read them: names in any case, values without the
/// optional whitespace around them and nothing else taken off.
@Suite struct ResponseHeadersTests {
    @Test func namesAreFoundInAnyCase() {
        let head = TransportResponseHead(status: 200, headers: ["Content-Length": "42", "etag": "\"a\""])
        #expect(head.header("content-length") == "42")
        #expect(head.header("CONTENT-LENGTH") == "42")
        #expect(head.header("ETag") == "\"a\"")
        #expect(head.headers.keys.sorted() == ["content-length", "etag"])
    }

    @Test func valuesLoseSpacesAndTabsAroundThemOnly() {
        #expect(" \t42\t ".trimmingOWS() == "42")
        #expect("42".trimmingOWS() == "42")
        #expect(" \t ".trimmingOWS() == "")
        #expect("".trimmingOWS() == "")
        #expect("  a b\tc ".trimmingOWS() == "a b\tc")
        // Not optional whitespace: a no-break space and a line break stay, as do other scripts.
        #expect(" \u{00A0}x\n ".trimmingOWS() == "\u{00A0}x\n")
        #expect("\tgrüße, 東京 é\t".trimmingOWS() == "grüße, 東京 é")
        #expect(" é".dropFirst(0).trimmingOWS() == "é")
    }

    @Test func headerRulesReadTrimmedValues() {
        let head = TransportResponseHead(status: 206, headers: [
            "content-length": " 42\t", "etag": "\t\"v1\" ", "content-range": "  bytes 0-9/100 ", "last-modified": " x "])
        #expect(ResponseHeaders.contentLength(head) == 42)
        #expect(ResponseHeaders.strongETag(head) == "\"v1\"")
        #expect(ResponseHeaders.contentRange(head.header("content-range")) == .init(first: 0, last: 9, total: 100))
        #expect(ResponseHeaders.rangeMismatch(head, ifRange: "\"v1\"", recordedTotal: 100) == nil)
        #expect(ResponseHeaders.rangeMismatch(head, ifRange: "x", recordedTotal: 100) == nil)
        #expect(ResponseHeaders.contentLength(TransportResponseHead(status: 200, headers: ["content-length": "-1"])) == nil)
        #expect(ResponseHeaders.retryAfter(" 7 ", now: Date()) == 7)
    }
}
