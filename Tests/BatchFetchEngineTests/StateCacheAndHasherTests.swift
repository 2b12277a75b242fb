@testable import BatchFetchEngine
import Crypto
import Foundation
import Testing

/// The state cache (verified digests kept between runs) and the in-order hasher of segmented
/// parts, without a network.
@Suite struct StateCacheAndHasherTests {
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
        try Data("{not json".utf8).write(to: url.appendingPathComponent(StateCache.fileName))
        try Data("x".utf8).write(to: url.appendingPathComponent("a.bin"))
        let root = try SafeDirectory.root(url.path, create: false)
        #expect(StateCache(directory: root).entry(for: "a.bin", status: root.status("a.bin")) == nil)
    }

    @Test func theHasherFollowsTheWrittenPrefixToTheSameDigestAsOnePass() async throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let file = url.appendingPathComponent("f.part")
        try bytes.write(to: file)
        let descriptor = open(file.path, O_RDONLY)
        #expect(descriptor >= 0)
        let hasher = OrderedHasher(descriptor: descriptor, path: file.path, algorithms: [.md5])
        // The prefix grows in uneven steps, and may be reported again or out of order.
        for offset: Int64 in [100, 1_048_576, 1_000, 2_500_000, 2_500_000] { hasher.advance(to: offset) }
        let digests = try await hasher.finish(total: Int64(bytes.count)).get()
        #expect(digests["sha256"] == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
        #expect(digests["md5"] == Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
    }
}
