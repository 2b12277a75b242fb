@testable import BatchFetchEngine
import BatchFetchSpec
import Crypto
import Foundation
import Testing
import TestOrigin

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

    @Test(arguments: [0, 1, 3])
    func theCacheIsWrittenAsAStreamInTheLayoutOfEncodingItWhole(count: Int) throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        let entries: [(String, StateCache.Entry)] = [
            ("a/b.bin", .init(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": "ab", "md5": "cd"],
                              urlSHA256: "ef", etag: "\"x\"", lastModified: nil)),
            ("c.bin", .init(device: 5, inode: 6, size: 0, mtimeNanoseconds: -1, digests: [:], urlSHA256: nil, etag: nil,
                            lastModified: "Mon, 23 Nov 2026 13:55:35 GMT")),
            ("d/\u{e9}.bin", .init(device: 7, inode: 8, size: 9, mtimeNanoseconds: 10, digests: ["sha256": "01"],
                                 urlSHA256: nil, etag: nil, lastModified: nil)),
        ]
        let files = Dictionary(uniqueKeysWithValues: entries.prefix(count))
        try root.writeAtomically("cache.json") { (writer: inout FileWriter) throws(DownloadFailure) in
            try StateCache.write(StateCache.Table(files.mapValues(StateCache.Held.init)), to: &writer)
        }
        let written = try Data(contentsOf: url.appendingPathComponent("cache.json"))
        #expect(written == (try StableJSON.encode(StateCache.Stored(files: files))))
        #expect(try JSONDecoder().decode(StateCache.Stored.self, from: written).files == files)
    }

    /// Random entries — names and validators with quotes, backslashes, control characters and
    /// other scripts, numbers at their limits, digests hex or not — written directly are the
    /// bytes `JSONEncoder` makes of the whole cache, and read back the same.
    @Test func randomEntriesAreWrittenAsTheEncoderWritesThem() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        var generator = SeededGenerator(seed: 1)
        let pieces = ["a", "/", "\"", "\\", "\n", "\t", "\u{1}", "\u{1f}", "\u{7f}", "\u{e9}", "\u{4e2d}", "\u{1F600}", " ", "0"]
        func text() -> String { (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined() }
        func hex() -> String { (0..<Int.random(in: 1...32, using: &generator)).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined() }
        func maybe(_ make: () -> String) -> String? { Bool.random(using: &generator) ? make() : nil }
        var files: [String: StateCache.Entry] = [:]
        for index in 0..<500 {
            var digests: [String: String] = [:]
            for algorithm in ["sha256", "md5", "sha1", "sha512"] where Bool.random(using: &generator) {
                digests[algorithm] = Bool.random(using: &generator) ? hex() : text()
            }
            files["\(text())\(index)"] = StateCache.Entry(
                device: [0, 1, UInt64.max, UInt64.random(in: 0...UInt64.max, using: &generator)].randomElement(using: &generator)!,
                inode: UInt64.random(in: 0...UInt64.max, using: &generator),
                size: [0, Int64.max, Int64.random(in: 0...Int64.max, using: &generator)].randomElement(using: &generator)!,
                mtimeNanoseconds: [Int64.min, -1, 0, Int64.max, Int64.random(in: Int64.min...Int64.max, using: &generator)]
                    .randomElement(using: &generator)!,
                digests: digests, urlSHA256: maybe(hex), etag: maybe(text), lastModified: maybe(text))
        }
        try root.writeAtomically("cache.json") { (writer: inout FileWriter) throws(DownloadFailure) in
            try StateCache.write(StateCache.Table(files.mapValues(StateCache.Held.init)), to: &writer)
        }
        let written = try Data(contentsOf: url.appendingPathComponent("cache.json"))
        #expect(written == (try StableJSON.encode(StateCache.Stored(files: files))))
        #expect(try JSONDecoder().decode(StateCache.Stored.self, from: written).files == files)
    }

    /// The cache is read back an entry at a time in its own layout, whole in any other (a file
    /// edited by hand), and not at all when it is not a version 1 cache.
    @Test(arguments: [0, 1, 4])
    func theCacheIsReadAnEntryAtATimeInItsLayoutAndWholeInAnother(count: Int) throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        let entries: [(String, StateCache.Entry)] = [
            ("a/b.bin", .init(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": String(repeating: "ab", count: 32), "md5": "cd"],
                              urlSHA256: "ef", etag: "\"x\"", lastModified: nil)),
            ("q\"uote\\d.bin", .init(device: 5, inode: 6, size: 0, mtimeNanoseconds: -1, digests: [:], urlSHA256: nil, etag: nil,
                                      lastModified: "Mon, 23 Nov 2026 13:55:35 GMT")),
            ("d/\u{e9} : {.bin", .init(device: 7, inode: 8, size: 9, mtimeNanoseconds: 10, digests: ["sha256": "01"],
                                      urlSHA256: nil, etag: "}", lastModified: nil)),
            ("e.bin", .init(device: 7, inode: 9, size: 9, mtimeNanoseconds: 10, digests: ["sha256": "02"],
                            urlSHA256: nil, etag: "\n    },", lastModified: nil)),
        ]
        let files = Dictionary(uniqueKeysWithValues: entries.prefix(count))
        try root.writeAtomically("cache.json") { (writer: inout FileWriter) throws(DownloadFailure) in
            try StateCache.write(StateCache.Table(files.mapValues(StateCache.Held.init)), to: &writer)
        }
        let written = try Data(contentsOf: url.appendingPathComponent("cache.json"))
        let expected = StateCache.Table(files.mapValues(StateCache.Held.init))
        #expect(StateCache.readEntries(written, capacity: 10, keeping: { _ in true }) == expected)
        #expect(StateCache.readEntries(written, capacity: 0, keeping: { $0 == "a/b.bin" })
                == StateCache.Table(files.filter { $0.key == "a/b.bin" }.mapValues(StateCache.Held.init)))
        let compact = try JSONEncoder().encode(StateCache.Stored(files: files))
        #expect(StateCache.readEntries(compact, capacity: 0, keeping: { _ in true }) == nil)
        #expect(StateCache.read(compact, capacity: 0, keeping: { _ in true }) == expected)
        var otherVersion = StateCache.Stored(files: files)
        otherVersion.version = 2
        let future = try StableJSON.encode(otherVersion)
        #expect(StateCache.read(future, capacity: 0, keeping: { _ in true }) == nil)
        #expect(StateCache.read(Data(written.dropLast()), capacity: 0, keeping: { _ in true }) == nil)
    }

    @Test func entriesAreHeldWithDigestsAsBytesAndGiveBackExactlyWhatWasRecorded() {
        let hex = "0123456789abcdef" + String(repeating: "f0", count: 24)
        let entries: [StateCache.Entry] = [
            .init(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": hex, "md5": "00ff"],
                  urlSHA256: String(hex.reversed()), etag: "\"e\"", lastModified: "x"),
            // Not lowercase hex of 64 digits: kept as text.
            .init(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": hex.uppercased()],
                  urlSHA256: String(hex.dropLast()), etag: nil, lastModified: "Mon, 23 Nov 2026 13:55:35 GMT"),
            .init(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": hex + "0"], urlSHA256: nil,
                  etag: nil, lastModified: nil),
            .init(device: 0, inode: 0, size: 0, mtimeNanoseconds: 0, digests: [:], urlSHA256: "", etag: nil, lastModified: nil),
        ]
        for entry in entries {
            #expect(StateCache.Held(entry).entry == entry)
        }
        #expect(StateCache.Held(entries[0]).sha256 != nil && StateCache.Held(entries[1]).sha256 == nil)
        #expect(StateCache.Held(entries[0]).lastModified == .text("x"))
        #expect(StateCache.Held(entries[1]).lastModified == .seconds(1_795_442_135))
        #expect(StateCache.HexDigest(hex: hex)?.hex == hex)
        #expect(StateCache.HexDigest(hex: "g" + hex.dropFirst()) == nil)
    }
}
