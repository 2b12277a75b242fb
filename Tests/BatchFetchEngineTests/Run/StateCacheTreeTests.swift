@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
@testable import BatchFetchState
import Foundation
import GRDB
import Testing

/// Extracted trees in the state store (Docs/StateStore.md): entries written as rows under a
/// generation and read back with a cursor; a tree is installed in one step, a recording a kill
/// left is removed on the next open, and a record missing rows is not trusted.
@Suite struct StateCacheTreeTests {
    static func entry(_ path: String, _ kind: ExtractedTree.Kind, inode: UInt64) -> ExtractedTree.Entry {
        ExtractedTree.Entry(path: path, kind: kind, size: kind == .file ? 5 : 0, inode: inode, mtimeNanoseconds: -7,
                            ctimeNanoseconds: Int64.max)
    }

    static func rows(_ url: URL) throws -> Int {
        try DatabaseQueue(path: url.appendingPathComponent(ToolFiles.stateStore).path).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM tree_entries") ?? -1
        }
    }

    /// More entries than a batch come back exactly, in path order; installing a new tree at the
    /// same place removes the old one's rows; a recording never installed (a kill) is removed
    /// when the store is next opened.
    @Test func treesAreRecordedInstalledAndCleanedUp() throws {
        let url = try StateCacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        let state = StateCache(directory: root)
        let count = StateCache.treeBatchSize + 10
        var recording = StateCache.TreeRecording(format: .tarGz, settings: "s", in: state)
        var written: [ExtractedTree.Entry] = []
        for index in 0..<count {
            let entry = Self.entry(String(format: "d/é %05d", count - index), index % 3 == 0 ? .directory : .file, inode: UInt64.max - UInt64(index))
            written.append(entry)
            recording.add(entry)
        }
        let first = recording.install(at: "t", archiveSHA256: "aa", urlSHA256: "u")
        #expect(first.entries == count && first.files == written.count { $0.kind == .file } && first.bytes == Int64(first.files * 5))
        let recorded = try #require(state.tree(at: "t"))
        #expect(recorded == first && recorded.archiveSHA256 == "aa" && recorded.urlSHA256 == "u")
        var read: [ExtractedTree.Entry] = []
        #expect(state.forEachEntry(of: recorded) { read.append($0); return true })
        #expect(read == written.sorted { $0.path < $1.path })

        var second = StateCache.TreeRecording(format: .zip, settings: "s", in: state)
        second.add(Self.entry("only", .file, inode: 1))
        let replaced = second.install(at: "t", archiveSHA256: "bb", urlSHA256: nil)
        #expect(replaced.generation != first.generation && state.tree(at: "t")?.format == "zip")
        #expect(try Self.rows(url) == 1)

        var killed = StateCache.TreeRecording(format: .tar, settings: "s", in: state)
        for index in 0..<(StateCache.treeBatchSize + 1) { killed.add(Self.entry("k\(index)", .file, inode: 2)) }
        #expect(try Self.rows(url) == StateCache.treeBatchSize + 1)  // one batch written, as it filled
        let reopened = StateCache(directory: root)
        #expect(try Self.rows(url) == 1)
        #expect(reopened.tree(at: "t")?.archiveSHA256 == "bb")
    }

    /// A record whose rows are not all there (the count in its header disagrees) is not trusted:
    /// the tree counts as differing even though every row that is left matches.
    @Test func aRecordMissingRowsIsNotTrusted() throws {
        let url = try StateCacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let root = try SafeDirectory.root(url.path, create: false)
        try FileManager.default.createDirectory(at: url.appendingPathComponent("t/sub"), withIntermediateDirectories: true)
        try Data("a".utf8).write(to: url.appendingPathComponent("t/a.txt"))
        try Data("b".utf8).write(to: url.appendingPathComponent("t/sub/b.txt"))
        let state = StateCache(directory: root)
        var recording = StateCache.TreeRecording(format: .tar, settings: "s", in: state)
        ExtractedTree.walk(try #require(try root.subdirectory("t", create: false))) { recording.add($0) }
        let tree = recording.install(at: "t", archiveSHA256: "aa", urlSHA256: nil)
        #expect(tree.entries == 3 && tree.files == 2 && tree.bytes == 2)
        #expect(tree.differences(in: root, into: "t", state: state).count == 0)

        try Data("changed".utf8).write(to: url.appendingPathComponent("t/a.txt"))
        let changed = tree.differences(in: root, into: "t", state: state)
        #expect(changed.count == 1 && changed.named.first?.path == "a.txt" && changed.named.first?.why == "changed")

        try DatabaseQueue(path: url.appendingPathComponent(ToolFiles.stateStore).path).write { db in
            try db.execute(sql: "DELETE FROM tree_entries WHERE path = 'a.txt'")
        }
        let missing = tree.differences(in: root, into: "t", state: state)
        #expect(missing.count == 1 && missing.named.first?.why == "not fully recorded")
    }

    /// A store of version 2 (trees with their entries inside one JSON record) is brought to
    /// version 3 in place: its files' rows stay, its tree records go (unpacked again once).
    @Test func aVersionTwoStoreKeepsItsFilesAndDropsItsTrees() throws {
        let url = try StateCacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let path = url.appendingPathComponent(ToolFiles.stateStore).path
        try DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: """
                CREATE TABLE files (dest TEXT NOT NULL PRIMARY KEY, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT, sha512 TEXT, sha1 TEXT, md5 TEXT,
                    url_sha256 TEXT, etag TEXT, last_modified TEXT) WITHOUT ROWID;
                CREATE TABLE trees (path TEXT NOT NULL PRIMARY KEY, record BLOB NOT NULL) WITHOUT ROWID;
                INSERT INTO trees VALUES ('t', '{"archive_sha256":"aa","settings":"s","format":"tar","entries":[]}');
                PRAGMA application_id = \(StateCache.applicationID); PRAGMA user_version = 2;
                """)
        }
        let root = try SafeDirectory.root(url.path, create: false)
        try Data("x".utf8).write(to: url.appendingPathComponent("a.bin"))
        var status = try #require(root.status("a.bin"))
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO files (dest, device, inode, size, mtime_ns, sha256) VALUES ('a.bin', 0, ?, 1, ?, 'aa')",
                           arguments: [Int64(bitPattern: UInt64(status.st_ino)), status.mtimeNanoseconds])
        }
        let state = StateCache(directory: root)
        #expect(state.warnings.isEmpty, "\(state.warnings)")
        status = try #require(root.status("a.bin"))
        #expect(state.entry(for: "a.bin", status: status)?.digests["sha256"] == "aa")
        #expect(state.tree(at: "t") == nil)
        let version = try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(version == StateCache.schemaVersion)
        #expect(try Self.rows(url) == 0)
    }
}
