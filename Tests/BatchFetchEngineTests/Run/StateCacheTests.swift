@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
@testable import BatchFetchState
import Foundation
import GRDB
import TestOrigin
import Testing

/// The state store: verified digests and validators kept between runs in SQLite, without a
/// network; a store that is not ours is set aside, never trusted; the JSON cache of earlier
/// versions is migrated once.
@Suite struct StateCacheTests {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The JSON cache as versions before the store wrote it.
    struct LegacyFile: Encodable {
        var files: [String: StateCache.Entry]
        var version = 1
    }

    @Test func anEntryCountsWhileTheFileIsUnchangedAndSurvivesARestart() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        try Data("first".utf8).write(to: url.appendingPathComponent("a.bin"))
        let cache = StateCache(directory: root)
        #expect(cache.warnings.isEmpty)
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
        // One SQLite file a user can read with sqlite3, in WAL mode.
        let journal = try DatabaseQueue(path: url.appendingPathComponent(ToolFiles.stateStore).path).read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "SELECT count(*) FROM files"))
        }
        #expect(journal.0 == "wal" && journal.1 == 1)
    }

    /// Random entries — names and validators with quotes, control characters and other scripts,
    /// numbers at their limits, digests hex or not — come back exactly as recorded, through a
    /// full batch written as it filled and the rest written by `save`.
    @Test func randomEntriesComeBackExactly() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        var generator = SeededGenerator(seed: 1)
        let pieces = ["a", "/", "\"", "\\", "\n", "\t", "\u{1}", "\u{1f}", "\u{7f}", "\u{e9}", "\u{4e2d}", "\u{1F600}", " ", "0", "'"]
        func text() -> String { (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined() }
        func hex() -> String { (0..<Int.random(in: 1...32, using: &generator)).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined() }
        func maybe(_ make: () -> String) -> String? { Bool.random(using: &generator) ? make() : nil }
        // Last-Modified as servers send it (kept as a time) and near misses (kept as text).
        func date() -> String {
            let real = IMFFixdate.format(Int64.random(in: -62_167_219_200...253_402_300_799, using: &generator))
            return [real, real.lowercased(), real.replacingOccurrences(of: ",", with: ""), "Sun, 30 Feb 2025 10:00:00 GMT",
                    text()].randomElement(using: &generator)!
        }
        var files: [String: StateCache.Entry] = [:]
        for index in 0..<(StateCache.batchSize + 300) {
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
                digests: digests, urlSHA256: maybe(hex), etag: maybe(text), lastModified: maybe(date))
        }
        let cache = StateCache(directory: root)
        for (dest, entry) in files { cache.record(dest, entry) }
        cache.save()
        let reloaded = StateCache(directory: root)
        for (dest, entry) in files { #expect(reloaded.recorded(dest) == entry, "\(dest)") }
    }

    /// A run reads the rows of its own dests and the upload records, nothing else: a row of a
    /// job no longer in the manifest is not held (it stays in the store).
    @Test func aRunHoldsOnlyTheRowsOfItsDestsAndTheUploadRecords() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        let cache = StateCache(directory: root)
        let entry = StateCache.Entry(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": String(repeating: "ab", count: 32)],
                                     urlSHA256: nil, etag: "\"e\"", lastModified: "Thu, 26 Nov 2026 04:06:36 GMT")
        let upload = JobUploader.stateKey(urlIdentity: "u")
        for dest in ["kept.bin", "gone.bin", upload] { cache.record(dest, entry) }
        cache.save()
        let run = StateCache(directory: root, dests: ["kept.bin", "new.bin"])
        #expect(run.recorded("kept.bin") == entry)
        #expect(run.recorded(upload) == entry)
        #expect(run.recorded("gone.bin") == nil)
        #expect(run.recorded("new.bin") == nil)
        #expect(StateCache(directory: root).recorded("gone.bin") == entry, "the store keeps the row")
    }

    /// A kill loses at most the batch not yet written: full batches are committed as they fill,
    /// and another process finds them without `save` (WAL: readers see committed transactions).
    @Test func fullBatchesAreCommittedWithoutASave() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        let cache = StateCache(directory: root)
        let entry = StateCache.Entry(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, digests: ["sha256": "ab"])
        for index in 0..<(StateCache.batchSize + 10) { cache.record("f\(index)", entry) }
        let count = try DatabaseQueue(path: url.appendingPathComponent(ToolFiles.stateStore).path).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM files")
        }
        #expect(count == StateCache.batchSize)
        let other = StateCache(directory: root)
        #expect(other.recorded("f0") == entry)
        #expect(other.recorded("f\(StateCache.batchSize + 9)") == nil, "not written yet")
    }

    /// A store that is not ours — a corrupt file, another program's database, a store of another
    /// version, a symlink planted at its name — is renamed `.unusable` with a warning, and a new
    /// store is made; nothing of it is trusted.
    @Test(arguments: ["garbage", "foreign", "future", "symlink"])
    func aStoreThatIsNotOursIsSetAsideAndRebuilt(kind: String) throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let path = url.appendingPathComponent(ToolFiles.stateStore).path
        let target = url.appendingPathComponent("elsewhere.sqlite").path
        switch kind {
        case "garbage":
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        case "foreign":
            try DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE files (dest TEXT, size INTEGER)") }
        case "future":
            try DatabaseQueue(path: path).writeWithoutTransaction { db in
                try db.execute(sql: "CREATE TABLE files (dest TEXT); PRAGMA application_id = \(StateCache.applicationID); PRAGMA user_version = 99")
            }
        default:
            try DatabaseQueue(path: target).write { db in try db.execute(sql: "CREATE TABLE mine (x INTEGER)") }
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        }
        let root = try SafeDirectory.root(url.path, create: false)
        try Data("x".utf8).write(to: url.appendingPathComponent("a.bin"))
        let cache = StateCache(directory: root)
        #expect(cache.warnings.count == 1 && cache.warnings[0].contains("set aside"), "\(cache.warnings)")
        #expect(FileManager.default.fileExists(atPath: path + ".unusable"))
        cache.record("a.bin", status: root.status("a.bin"), digests: ["sha256": "aa"], urlSHA256: nil, etag: nil, lastModified: nil)
        cache.save()
        #expect(StateCache(directory: root).entry(for: "a.bin", status: root.status("a.bin"))?.digests == ["sha256": "aa"])
        if kind == "symlink" {
            // The planted link's target was never written to.
            let tables = try DatabaseQueue(path: target).read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master") }
            #expect(tables == ["mine"])
        }
    }

    /// The JSON cache of earlier versions fills a new store once and is removed; one that cannot
    /// be read is left as it is, with a warning.
    @Test func theJSONCacheOfEarlierVersionsIsMigratedOnce() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        try Data("first".utf8).write(to: url.appendingPathComponent("a.bin"))
        let status = try #require(root.status("a.bin"))
        var entry = StateCache.Entry(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size),
                                     mtimeNanoseconds: 0, digests: ["sha256": "aa", "md5": "bb"], urlSHA256: "u", etag: "\"e\"",
                                     lastModified: "Mon, 23 Nov 2026 13:55:35 GMT")
        entry.mtimeNanoseconds = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        try StableJSON.encode(LegacyFile(files: ["a.bin": entry, "q\"uote.bin": entry])).write(to: url.appendingPathComponent(ToolFiles.stateCache))
        let cache = StateCache(directory: root)
        #expect(cache.warnings.isEmpty)
        #expect(cache.entry(for: "a.bin", status: root.status("a.bin")) == entry)
        #expect(cache.recorded("q\"uote.bin") == entry)
        #expect(!FileManager.default.fileExists(atPath: url.appendingPathComponent(ToolFiles.stateCache).path))

        let broken = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: broken) }
        try Data("{not json".utf8).write(to: broken.appendingPathComponent(ToolFiles.stateCache))
        let brokenRoot = try SafeDirectory.root(broken.path, create: false)
        let fresh = StateCache(directory: brokenRoot)
        #expect(fresh.warnings.count == 1 && fresh.warnings[0].contains("could not be read"))
        #expect(FileManager.default.fileExists(atPath: broken.appendingPathComponent(ToolFiles.stateCache).path))
    }

    @Test func aShardKeepsItsOwnStoreStartingFromTheWholeManifestsEntriesForItsJobs() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        for name in ["a.bin", "b.bin"] { try Data(name.utf8).write(to: url.appendingPathComponent(name)) }
        let whole = StateCache(directory: root)
        for name in ["a.bin", "b.bin"] {
            whole.record(name, status: root.status(name), digests: ["sha256": name], urlSHA256: nil, etag: nil, lastModified: nil)
        }
        whole.save()

        let shardFile = Shard(index: 1, count: 2)!.fileName(ToolFiles.stateStore)
        let shardLegacy = Shard(index: 1, count: 2)!.fileName(ToolFiles.stateCache)
        let shard = StateCache(directory: root, fileName: shardFile, legacyFileName: shardLegacy, seed: .init(dests: ["b.bin"]))
        #expect(shard.entry(for: "b.bin", status: root.status("b.bin"))?.digests == ["sha256": "b.bin"])
        #expect(shard.entry(for: "a.bin", status: root.status("a.bin")) == nil, "another shard's entry")
        try Data("c".utf8).write(to: url.appendingPathComponent("c.bin"))
        shard.record("c.bin", status: root.status("c.bin"), digests: ["sha256": "c"], urlSHA256: nil, etag: nil, lastModified: nil)
        shard.save()
        // The shard wrote its own store only; once it exists, the whole one is not read again.
        #expect(StateCache(directory: root).entry(for: "c.bin", status: root.status("c.bin")) == nil)
        let again = StateCache(directory: root, fileName: shardFile, legacyFileName: shardLegacy,
                               seed: .init(dests: ["a.bin", "b.bin", "c.bin"]))
        #expect(again.entry(for: "c.bin", status: root.status("c.bin")) != nil)
        #expect(again.entry(for: "a.bin", status: root.status("a.bin")) == nil)
    }

    /// A dry run reads a store that is there and changes nothing: no store is made, no JSON
    /// cache migrated.
    @Test func aReadOnlyStoreChangesNothing() throws {
        let url = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        try StableJSON.encode(LegacyFile(files: [:])).write(to: url.appendingPathComponent(ToolFiles.stateCache))
        let cache = StateCache(directory: root, readOnly: true)
        #expect(cache.recorded("a.bin") == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path)
        #expect(names == [ToolFiles.stateCache])
    }

    /// The JSON of earlier versions is read an entry at a time in their layout, whole in any
    /// other (a file edited by hand), and not at all when it is not a version 1 cache.
    @Test(arguments: [0, 1, 4])
    func theLegacyFileIsReadInItsLayoutAndWholeInAnother(count: Int) throws {
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
        func read(_ text: Data, keeping keep: (String) -> Bool = { _ in true }) -> [String: StateCache.Entry]? {
            var found: [String: StateCache.Entry] = [:]
            return LegacyStateFile.read(text, keeping: keep) { found[$0] = $1 } ? found : nil
        }
        let layout = try StableJSON.encode(LegacyFile(files: files))
        #expect(read(layout) == files)
        #expect(read(layout, keeping: { $0 == "a/b.bin" }) == files.filter { $0.key == "a/b.bin" })
        #expect(read(try JSONEncoder().encode(LegacyFile(files: files))) == files)
        #expect(read(try StableJSON.encode(LegacyFile(files: files, version: 2))) == nil)
        #expect(read(Data(layout.dropLast())) == nil)
    }
}
