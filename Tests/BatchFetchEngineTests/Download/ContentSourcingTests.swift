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
        #expect(ContentSourcing.sources(Facts(destination: .revalidate, twin: true, sha256: "ab", cache: true)) == [.revalidate])
    }

    /// The file at `dest`, or the tree an earlier run unpacked from an archive not kept, comes
    /// before anything that asks anyone; neither looks the content up by its sha256.
    @Test func whatIsOnDiskComesFirst() {
        let everything = Facts(twin: true, sha256: "ab", cache: true, hashMirrors: true)
        var upToDate = everything
        upToDate.destination = .upToDate
        #expect(ContentSourcing.sources(upToDate) == [.destination])
        #expect(!ContentSourcing.asksByContent(upToDate))
        var kept = everything
        kept.keptTree = true
        #expect(ContentSourcing.sources(kept) == [.keptTree])
        #expect(!ContentSourcing.asksByContent(kept))
        // A kept tree answers whatever the destination says (its archive is gone).
        kept.destination = .revalidate
        #expect(ContentSourcing.sources(kept) == [.keptTree])
    }

    /// The sha256 (a cache lookup) is asked for only when the cache or a hash mirror could use
    /// it: a fetch, no twin, and a cache or hash mirrors.
    @Test func theContentKeyIsLookedUpOnlyWhenItCanBeUsed() {
        #expect(ContentSourcing.asksByContent(Facts(cache: true)))
        #expect(ContentSourcing.asksByContent(Facts(hashMirrors: true)))
        #expect(!ContentSourcing.asksByContent(Facts()))
        #expect(!ContentSourcing.asksByContent(Facts(twin: true, cache: true)))
        #expect(!ContentSourcing.asksByContent(Facts(destination: .revalidate, cache: true)))
    }
}
