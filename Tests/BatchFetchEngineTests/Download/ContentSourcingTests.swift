@testable import BatchFetchEngine
import Testing

/// Where a job's content comes from, and in which order, decided without I/O.
@Suite struct ContentSourcingTests {
    typealias Facts = ContentSourcing.Facts

    @Test func theOrder() {
        // Nothing known: the job's own mirrors.
        #expect(ContentSourcing.sources(Facts()) == [.origins])
        // A known sha256: the cache, then the hash mirrors, then the origins.
        #expect(ContentSourcing.sources(Facts(sha256: "ab", cache: true, hashMirrors: true))
            == [.cache(sha256: "ab"), .hashMirrors(sha256: "ab"), .origins])
        // No sha256: neither the cache nor a hash mirror can be asked.
        #expect(ContentSourcing.sources(Facts(cache: true, hashMirrors: true)) == [.origins])
        // A partial of the job's own is resumed from its URLs: a hash mirror would replace it.
        #expect(ContentSourcing.sources(Facts(sha256: "ab", cache: true, hashMirrors: true, partial: true))
            == [.cache(sha256: "ab"), .origins])
    }

    @Test func aTwinOrARevalidationIsTheOnlySource() {
        #expect(ContentSourcing.sources(Facts(twin: true, sha256: "ab", cache: true)) == [.twin])
        #expect(ContentSourcing.sources(Facts(revalidating: true, twin: true, sha256: "ab", cache: true)) == [.revalidate])
    }
}
