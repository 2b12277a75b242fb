import BatchFetchSpec
import Testing

@Suite struct DestPathTests {
    @Test func normalisation() {
        #expect(DestPath.normalize("a/./b//c") == .success("a/b/c"))
        #expect(DestPath.normalize("a/../b") == .success("b"))
        #expect(DestPath.normalize("../a") == .failure(.escapes))
        #expect(DestPath.normalize("a/../../b") == .failure(.escapes))
        #expect(DestPath.normalize("/etc/passwd") == .failure(.absolute))
        #expect(DestPath.normalize("a/") == .failure(.directory))
        #expect(DestPath.normalize("a/..") == .failure(.empty))
        #expect(DestPath.normalize("") == .failure(.empty))
    }

    @Test func fileNameFromURL() {
        #expect(DestPath.lastSegment(ofURL: "https://h.example/ds/train.tar.gz?sig=1#x") == "train.tar.gz")
        #expect(DestPath.lastSegment(ofURL: "https://h.example/a%20b.txt") == "a b.txt")
        #expect(DestPath.lastSegment(ofURL: "https://h.example/") == nil)
        #expect(DestPath.lastSegment(ofURL: "https://h.example") == nil)
        #expect(DestPath.lastSegment(ofURL: "https://h.example/x/..") == nil)
        #expect(DestPath.lastSegment(ofURL: "https://h.example/a%2Fb") == nil)
        // Delimiters are found as bytes: in a query, after a port or userinfo, next to non-ASCII.
        #expect(DestPath.lastSegment(ofURL: "https://h.example/d/f.bin?next=/y.bin") == "f.bin")
        #expect(DestPath.lastSegment(ofURL: "http://u:p:w@h.example:8080/a/b.bin#/c") == "b.bin")
        #expect(DestPath.lastSegment(ofURL: "https://h.example/d\u{e4}/\u{fc}.bin") == "\u{fc}.bin")
        #expect(DestPath.lastSegment(ofURL: "file:///srv/x.bin") == "x.bin")
        #expect(DestPath.lastSegment(ofURL: "h.example/x.bin") == nil)
        #expect(DestPath.lastSegment(ofURL: "http:/h.example/x.bin") == nil)
        #expect(DestPath.rawLastSegment(ofURL: "https://h.example/a%20b.txt?q") == "a%20b.txt")
    }

    /// A job list row's default dest: the whole path, decoded, without the leading `/`.
    @Test func decodedPathOfAURL() {
        #expect(DestPath.decodedPath(ofURL: "https://h.example/n01/a%20b.jpg?x=/y#z") == "n01/a b.jpg")
        #expect(DestPath.decodedPath(ofURL: "http://u:p@h.example:8080/d/\u{e4}.bin") == "d/\u{e4}.bin")
        #expect(DestPath.decodedPath(ofURL: "https://h.example/") == "")
        #expect(DestPath.decodedPath(ofURL: "https://h.example") == nil)
        #expect(DestPath.decodedPath(ofURL: "https://h.example?q=/a") == nil)
        #expect(DestPath.decodedPath(ofURL: "h.example/a") == nil)
        #expect(DestPath.decodedPath(ofURL: "https://h.example/a%2") == "a%2")  // not decodable: kept as written
    }
}
