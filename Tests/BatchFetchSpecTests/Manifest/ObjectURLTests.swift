import BatchFetchSpec
import Testing

/// Store URLs taken apart in one place (``ObjectURL``): what validation, prefix expansion and
/// the signing mirrors read.
@Suite struct ObjectURLTests {
    @Test func bucketsKeysAndPrefixes() throws {
        let object = try #require(ObjectURL.parse("S3://data/ds/a%20b.bin", shown: "s")).get()
        #expect(object == ObjectURL(store: .s3, bucket: "data", key: "ds/a b.bin") && !object.isPrefix)
        #expect(try #require(ObjectURL.parse("gs://b/dir/", shown: "s")).get().isPrefix)
        #expect(try #require(ObjectURL.parse("gs://b", shown: "s")).get() == ObjectURL(store: .gs, bucket: "b", key: ""))
        #expect(ObjectURL.parse("https://h/x", shown: "s") == nil)
        #expect(ObjectURL.isPrefix("s3://b/") && ObjectURL.isPrefix("s3://b") && !ObjectURL.isPrefix("s3://b/k"))
        #expect(!ObjectURL.isPrefix("https://h/dir/"))
    }

    @Test func unusableStoreURLsSayWhy() {
        #expect(ObjectURL.parse("s3:///k", shown: "S") == .failure(URLProblem("URL 'S' has no bucket")))
        #expect(ObjectURL.parse("s3://b/k?versionId=3", shown: "S") == .failure(URLProblem("URL 'S': an object URL has no query or fragment")))
    }
}
