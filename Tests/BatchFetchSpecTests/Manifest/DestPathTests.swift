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
    }
}
