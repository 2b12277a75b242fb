/// Where a job's content may come from, in the order they are tried: a pure decision from what
/// the downloader knows before it asks anyone (Docs/Architecture.md, decision table). The
/// ``JobDownloader`` tries the sources in this order and decides nothing about them: the first
/// that gives a result ends the job; one that cannot (the cache lacks the entry, every hash
/// mirror misses) passes to the next.
enum ContentSourcing {
    enum Source: Equatable {
        /// `keep_archive: false`: the archive is gone since an earlier run unpacked it, and the
        /// tree recorded from it is whole: the job is up to date without its archive.
        case keptTree
        /// `dest` already holds the content (``DestinationCheck``): nothing to fetch.
        case destination
        /// The file at `dest` asked of its origin with its validators (`refresh: if-changed`).
        case revalidate
        /// A job of this run that fetched the same URL: its file, linked or copied.
        case twin
        /// The content cache's entry of this sha256.
        case cache(sha256: String)
        /// The hash mirrors, asked for this sha256 before the job's own URLs.
        case hashMirrors(sha256: String)
        /// The job's own mirrors.
        case origins
    }

    /// What ``DestinationCheck`` said of the file at `dest`.
    enum Destination: Equatable {
        case upToDate, revalidate, fetch
    }

    /// What the downloader knows: whether the tree an earlier run unpacked stands for the
    /// archive (``JobDownloader``'s `keep_archive: false` check), what the file at `dest` is,
    /// whether a twin job fetched the same URL, the content's sha256 if known (pinned, or known
    /// to the cache through another pinned digest; looked up only when ``asksByContent(_:)``),
    /// whether there is a cache and hash mirrors, and whether an earlier run left a partial
    /// (which only the job's own URLs can resume: a hash mirror would replace it).
    struct Facts: Equatable {
        var keptTree = false
        var destination = Destination.fetch
        var twin = false
        var sha256: String?
        var cache = false
        var hashMirrors = false
        var partial = false
    }

    /// Whether the content may be looked for by its sha256 — in the cache or on hash mirrors —
    /// so that the downloader looks the sha256 up (a cache lookup) only then.
    static func asksByContent(_ facts: Facts) -> Bool {
        !facts.keptTree && facts.destination == .fetch && !facts.twin && (facts.cache || facts.hashMirrors)
    }

    static func sources(_ facts: Facts) -> [Source] {
        if facts.keptTree { return [.keptTree] }
        switch facts.destination {
        case .upToDate: return [.destination]
        case .revalidate: return [.revalidate]
        case .fetch: break
        }
        if facts.twin { return [.twin] }
        var sources: [Source] = []
        if let sha256 = facts.sha256, asksByContent(facts) {
            if facts.cache { sources.append(.cache(sha256: sha256)) }
            if facts.hashMirrors, !facts.partial { sources.append(.hashMirrors(sha256: sha256)) }
        }
        return sources + [.origins]
    }
}
