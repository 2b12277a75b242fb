import BatchFetchFiles
import BatchFetchSpec
import Foundation
import GRDB

/// The trees `extract:` made (Docs/StateStore.md, Docs/Archives.md): one row of `trees` per
/// `into` (the ``ExtractedTree`` header as JSON) and one row of `tree_entries` per entry, under
/// the header's `generation`. Entries are written in batches while a tree is recorded and read
/// with a cursor while one is checked, so a tree of a million entries costs a run a batch of
/// memory, not the whole tree. A new tree's rows are written under a fresh generation, listed in
/// `tree_writes` until the tree is installed (its header switched to them and the old rows
/// removed, in one transaction) or discarded; the generations a killed run left there are
/// removed when the store is next opened for writing.
extension StateCache {
    static let createTrees = """
        CREATE TABLE trees (
            path TEXT NOT NULL PRIMARY KEY,
            record BLOB NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE tree_entries (
            tree INTEGER NOT NULL,
            path TEXT NOT NULL,
            kind TEXT NOT NULL,
            size INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            ctime_ns INTEGER NOT NULL,
            PRIMARY KEY (tree, path)
        ) WITHOUT ROWID;
        CREATE TABLE tree_writes (
            tree INTEGER PRIMARY KEY AUTOINCREMENT
        );
        """

    /// Entries written per transaction while a tree is recorded.
    package static let treeBatchSize = 4096

    /// The tree last installed at `into` (relative to the output directory), if one is recorded.
    package func tree(at into: String) -> ExtractedTree? {
        guard let data = try? database?.read({ db in
            try Data.fetchOne(db, sql: "SELECT record FROM trees WHERE path = ?", arguments: [into])
        }) else { return nil }
        return try? JSONDecoder().decode(ExtractedTree.self, from: data)
    }

    /// Calls `body` with each recorded entry of `tree`, in path order, until it returns false.
    /// False when the rows could not be read (then nothing of the tree is to be trusted).
    package func forEachEntry(of tree: ExtractedTree, _ body: (ExtractedTree.Entry) -> Bool) -> Bool {
        guard let database, tree.generation != 0 else { return false }
        do {
            try database.read { db in
                let rows = try Row.fetchCursor(db, sql: """
                    SELECT path, kind, size, inode, mtime_ns, ctime_ns FROM tree_entries WHERE tree = ? ORDER BY path
                    """, arguments: [tree.generation])
                while let row = try rows.next() {
                    guard let kind = ExtractedTree.Kind(rawValue: row[1]) else { throw StoreError.unknownKind }
                    let entry = ExtractedTree.Entry(path: row[0], kind: kind, size: row[2], inode: UInt64(bitPattern: row[3]),
                                                    mtimeNanoseconds: row[4], ctimeNanoseconds: row[5])
                    if !body(entry) { return }
                }
            }
            return true
        } catch {
            return false
        }
    }

    private enum StoreError: Error {
        case unknownKind
    }

    /// A tree being recorded: entries are counted into its header and written in batches under
    /// its own generation. Without a store it only counts (the tree is then not recorded, and
    /// a rerun unpacks it again).
    package struct TreeRecording {
        private let state: StateCache
        package private(set) var tree: ExtractedTree
        private var batch: [ExtractedTree.Entry] = []
        /// False once a write failed: the tree is then not installed as recorded.
        private var written = true

        /// Starts recording a tree of `format` unpacked with `settings` (``Extract/settingsKey``)
        /// under a new generation.
        package init(format: Extract.Format, settings: String, in state: StateCache) {
            self.state = state
            tree = ExtractedTree(archiveSHA256: "", settings: settings, format: format.rawValue, urlSHA256: nil)
            tree.generation = (try? state.database?.write { db -> Int64 in
                try db.execute(sql: "INSERT INTO tree_writes DEFAULT VALUES")
                return db.lastInsertedRowID
            }) ?? 0
            batch.reserveCapacity(StateCache.treeBatchSize)
        }

        package mutating func add(_ entry: ExtractedTree.Entry) {
            tree.count(entry)
            guard tree.generation != 0 else { return }
            batch.append(entry)
            if batch.count >= StateCache.treeBatchSize { flush() }
        }

        /// Writes the entries not yet written.
        package mutating func flush() {
            guard let database = state.database, tree.generation != 0, !batch.isEmpty else { return }
            let entries = batch
            let generation = tree.generation
            batch.removeAll(keepingCapacity: true)
            do {
                try database.write { db in
                    let insert = try db.cachedStatement(sql: """
                        INSERT OR REPLACE INTO tree_entries (tree, path, kind, size, inode, mtime_ns, ctime_ns)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """)
                    for entry in entries {
                        try insert.execute(arguments: [generation, entry.path, entry.kind.rawValue, entry.size,
                                                       Int64(bitPattern: entry.inode), entry.mtimeNanoseconds, entry.ctimeNanoseconds])
                    }
                }
            } catch {
                written = false
            }
        }

        /// Makes the recorded tree — unpacked from the archive `archiveSHA256`, fetched from the
        /// URL `urlSHA256` — the one at `into`, the rows of the tree it replaces removed;
        /// the header as installed. A recording that could not be written removes the record
        /// of `into` instead: the tree there is then unknown, and unpacked again by a rerun.
        package mutating func install(at into: String, archiveSHA256: String, urlSHA256: String?) -> ExtractedTree {
            flush()
            tree.archiveSHA256 = archiveSHA256
            tree.urlSHA256 = urlSHA256
            guard let database = state.database, tree.generation != 0 else { return tree }
            let tree = self.tree
            let written = self.written
            _ = try? database.write { db in
                let old = try Data.fetchOne(db, sql: "SELECT record FROM trees WHERE path = ?", arguments: [into])
                    .flatMap { try? JSONDecoder().decode(ExtractedTree.self, from: $0) }
                if let old, old.generation != tree.generation {
                    try db.execute(sql: "DELETE FROM tree_entries WHERE tree = ?", arguments: [old.generation])
                }
                if written {
                    try db.execute(sql: "INSERT OR REPLACE INTO trees (path, record) VALUES (?, ?)",
                                   arguments: [into, try JSONEncoder().encode(tree)])
                } else {
                    try db.execute(sql: "DELETE FROM trees WHERE path = ?", arguments: [into])
                    try db.execute(sql: "DELETE FROM tree_entries WHERE tree = ?", arguments: [tree.generation])
                }
                try db.execute(sql: "DELETE FROM tree_writes WHERE tree = ?", arguments: [tree.generation])
            }
            return tree
        }

        /// Removes what was recorded of a tree that is not installed.
        package func discard() {
            guard tree.generation != 0 else { return }
            _ = try? state.database?.write { db in
                try StateCache.removeGeneration(tree.generation, db)
            }
        }
    }

    /// Removes the rows of the trees a killed run was recording (listed in `tree_writes`).
    package static func removeUnfinishedTrees(_ db: Database) throws {
        let unfinished = try Int64.fetchAll(db, sql: "SELECT tree FROM tree_writes")
        guard !unfinished.isEmpty else { return }
        try db.inTransaction {
            for generation in unfinished { try removeGeneration(generation, db) }
            return .commit
        }
    }

    private static func removeGeneration(_ generation: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM tree_entries WHERE tree = ?", arguments: [generation])
        try db.execute(sql: "DELETE FROM tree_writes WHERE tree = ?", arguments: [generation])
    }
}
