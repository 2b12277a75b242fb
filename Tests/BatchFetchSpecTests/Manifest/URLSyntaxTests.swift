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

    /// Raw characters are encoded and escapes kept: `ü%20b` was sent as `%C3%BC%2520b` (issue 33).
    @Test(arguments: [
        ("http://h/ü%20b.bin", "http://h/%C3%BC%20b.bin"),
        ("http://h/a%2Fb?q=%E2%82%AC&r=€", "http://h/a%2Fb?q=%E2%82%AC&r=%E2%82%AC"),
        ("http://h/100%", "http://h/100%25"),
        ("http://h/%zz", "http://h/%25zz"),
        ("http://h:8080/plain/path?x=1#f", "http://h:8080/plain/path?x=1#f"),
        ("http://user:p%40ss@h/a b", "http://user:p%40ss@h/a%20b"),
        ("/relative/ü", "/relative/%C3%BC"),
    ])
    func invalidCharactersAreEncodedAndEscapesKept(input: String, expected: String) throws {
        let encoded = URLSyntax.encodingInvalidCharacters(input)
        #expect(encoded == expected)
        let url = try #require(URL(string: encoded))
        #expect(url.absoluteString == expected)
    }
}
