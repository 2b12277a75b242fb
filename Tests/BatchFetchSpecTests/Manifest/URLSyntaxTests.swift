@testable import BatchFetchSpec
import Foundation
import Testing

/// The fast path accepts only what URLComponents also accepts as an http(s) URL with a host.
@Suite struct URLSyntaxTests {
    @Test(arguments: [
        "https://h.example/a.bin", "HTTP://H.EXAMPLE:8080/x?y=1#z", "http://127.0.0.1:9/a%20b",
        "https://h.example", "https://h-1.example/~user/file(1).tar.gz",
    ])
    func plainURLsAreAccepted(url: String) throws {
        #expect(URLSyntax.isPlainHTTPURL(url))
        let components = try #require(URLComponents(string: url))
        #expect(components.host?.isEmpty == false)
    }

    @Test(arguments: [
        "ftp://h.example/a", "https:/h.example/a", "https://", "https://h.example/a b", "https://h.example/%zz",
        "https://user@h.example/a", "https://[::1]/a", "https://h.example:80a/", "https://h.example/ä",
    ])
    func everythingElseGoesToTheFullParser(url: String) {
        #expect(!URLSyntax.isPlainHTTPURL(url))
    }

    @Test func fullParserStillAcceptsWhatTheFastPathDeclines() {
        #expect(ManifestDecoder.urlProblem(TemplatedString(literal: "https://[::1]:8080/a")) == nil)
        #expect(ManifestDecoder.urlProblem(TemplatedString(literal: "https://user@h.example/a")) == nil)
        #expect(ManifestDecoder.urlProblem(TemplatedString(literal: "https://h.example/a b")) != nil)
    }
}
