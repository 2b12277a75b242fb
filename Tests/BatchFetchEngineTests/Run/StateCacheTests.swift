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
}
