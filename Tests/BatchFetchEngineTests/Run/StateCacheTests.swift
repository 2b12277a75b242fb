@testable import BatchFetchEngine
import BatchFetchSpec
import Crypto
import Foundation
import Testing

/// The state cache: verified digests and validators kept between runs, without a network.
@Suite struct StateCacheTests {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func anEntryCountsWhileTheFileIsUnchangedAndSurvivesARestart() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        try Data("first".utf8).write(to: url.appendingPathComponent("a.bin"))
        let cache = StateCache(directory: root)
        cache.record("a.bin", status: root.status("a.bin"), digests: ["sha256": "aa"], urlSHA256: "u", etag: "\"e\"",
                     lastModified: nil)
        #expect(cache.entry(for: "a.bin", status: root.status("a.bin"))?.digests == ["sha256": "aa"])
        cache.save()

        let reloaded = StateCache(directory: root)
        #expect(reloaded.entry(for: "a.bin", status: root.status("a.bin"))?.etag == "\"e\"")
        // Any rewrite makes the entry stale: the file is hashed again.
        try Data("second, longer".utf8).write(to: url.appendingPathComponent("a.bin"))
        #expect(reloaded.entry(for: "a.bin", status: root.status("a.bin")) == nil)
        #expect(reloaded.entry(for: "missing.bin", status: root.status("missing.bin")) == nil)
    }

    @Test func anUnreadableCacheIsAnEmptyOne() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("{not json".utf8).write(to: url.appendingPathComponent(ToolFiles.stateCache))
        try Data("x".utf8).write(to: url.appendingPathComponent("a.bin"))
        let root = try SafeDirectory.root(url.path, create: false)
        #expect(StateCache(directory: root).entry(for: "a.bin", status: root.status("a.bin")) == nil)
    }

    @Test func aShardKeepsItsOwnCacheStartingFromTheWholeManifestsEntriesForItsJobs() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        for name in ["a.bin", "b.bin"] { try Data(name.utf8).write(to: url.appendingPathComponent(name)) }
        let whole = StateCache(directory: root)
        for name in ["a.bin", "b.bin"] {
            whole.record(name, status: root.status(name), digests: ["sha256": name], urlSHA256: nil, etag: nil, lastModified: nil)
        }
        whole.save()

        let shardFile = Shard(index: 1, count: 2)!.fileName(ToolFiles.stateCache)
        let shard = StateCache(directory: root, fileName: shardFile, seed: (ToolFiles.stateCache, ["b.bin"]))
        #expect(shard.entry(for: "b.bin", status: root.status("b.bin"))?.digests == ["sha256": "b.bin"])
        #expect(shard.entry(for: "a.bin", status: root.status("a.bin")) == nil, "another shard's entry")
        try Data("c".utf8).write(to: url.appendingPathComponent("c.bin"))
        shard.record("c.bin", status: root.status("c.bin"), digests: ["sha256": "c"], urlSHA256: nil, etag: nil, lastModified: nil)
        shard.save()
        // The shard wrote its own file only; once it exists, the whole cache is not read again.
        #expect(StateCache(directory: root).entry(for: "c.bin", status: root.status("c.bin")) == nil)
        let again = StateCache(directory: root, fileName: shardFile, seed: (ToolFiles.stateCache, ["a.bin", "b.bin", "c.bin"]))
        #expect(again.entry(for: "c.bin", status: root.status("c.bin")) != nil)
        #expect(again.entry(for: "a.bin", status: root.status("a.bin")) == nil)
    }
}
