import BatchFetchFiles
import BatchFetchSpec
import Foundation
import GRDB
import NIOConcurrencyHelpers

/// What batchfetch knows about the files it published, kept between runs in an SQLite database,
/// `<output_dir>/.batchfetch-state.sqlite` (one per shard: SQLite's locking is not safe on NFS,
/// and shards may share `output_dir`): for each dest its identity on disk (device, inode, size,
/// mtime), its verified digests, and the validators it was served with. A nightly rerun then
/// checks unchanged files with one `stat` each instead of hashing them, and `refresh: if-changed`
/// has an ETag or Last-Modified for its conditional request. The schema is in Docs/StateStore.md.
///
/// An entry counts only while the file's identity is unchanged; any write, replacement or touch
/// makes it stale and the file is hashed again. The store is a hint: losing it costs a re-hash,
/// so it is never trusted when in doubt. A file that is not a batchfetch store of this version (a
/// foreign or corrupt database, anything that is not a regular file) is renamed to
/// `<name>.unusable` with a warning and a new store is made.
///
/// Rows are written in batches of ``batchSize`` as jobs finish, each in one transaction, in WAL
/// mode: a kill loses at most the rows not yet written, and only hints. The rows are read once,
/// in one scan, when the store is opened, and a run's lookups are made in memory. The JSON file
/// of earlier versions (`.batchfetch-state.json`) is migrated into a new store once and
/// then removed. Why SQLite, and why GRDB: Docs/StateStore.md.
package final class StateCache: Sendable {
    package struct Entry: Codable, Sendable, Equatable {
        package var device: UInt64
        package var inode: UInt64
        package var size: Int64
        package var mtimeNanoseconds: Int64
        /// Verified digests by algorithm (sha256 always).
        package var digests: [String: String]
        /// sha256 of the resolved URL that served the file, and its validators.
        package var urlSHA256: String?
        package var etag: String?
        package var lastModified: String?

        package enum CodingKeys: String, CodingKey {
            case device, inode, size, mtimeNanoseconds = "mtime_ns", digests, urlSHA256 = "url_sha256", etag
            case lastModified = "last_modified"
        }

        /// The file's identity as recorded (no ctime: the store does not keep it).
        package var identity: FileIdentity {
            FileIdentity(device: device, inode: inode, size: size, mtimeNanoseconds: mtimeNanoseconds)
        }

        /// Whether `other` describes the same, unchanged file (``FileIdentity/Comparison/content``:
        /// the device is recorded but not compared).
        package func sameFile(as other: Entry) -> Bool {
            identity.matches(other.identity, by: .content)
        }
    }

    /// Where a new store starts from besides its own JSON predecessor: the whole manifest's
    /// store (or its JSON predecessor), for the dests of a shard's jobs — splitting a manifest
    /// that was run whole then costs no re-hashing.
    package struct Seed: Sendable {
        package var fileName = ToolFiles.stateStore
        package var legacyFileName = ToolFiles.stateCache
        package var dests: Set<String>

        package init(dests: Set<String>) {
            self.dests = dests
        }
    }

    /// Rows written per transaction.
    package static let batchSize = 1024
    /// `PRAGMA application_id` of a batchfetch store ("bfst"), and `PRAGMA user_version`.
    package static let applicationID: Int32 = 0x6266_7374
    /// 2 added the `trees` table (`extract:`), 3 its entries as rows (`tree_entries`) and the
    /// object stores' unfinished multipart uploads (`multipart_uploads`); a store of version 1 or
    /// 2 gains them in place (version 2's tree records are dropped: those trees
    /// are unpacked again once); 4 the verified signatures of checksum files (`signatures`),
    /// which a store of an earlier version gains in place.
    package static let schemaVersion = 4

    private struct Rows {
        /// Recorded and not yet written, by dest.
        var pending: [String: Entry] = [:]
        /// Being written now (still answered from memory until the transaction commits).
        var writing: [String: Entry] = [:]
    }

    /// Nil when there is no output directory or no store could be opened there: entries then
    /// live only in memory, for this run (and extracted trees are not recorded).
    package let database: DatabaseQueue?
    /// The rows as the store held them when it was opened, read in one scan: the lookups of a
    /// run. A row recorded since is in `rows` until it is written, and then only in the
    /// database — where no lookup of this run needs it (each job looks its dest up before it
    /// records it; a twin that misses hashes the file).
    private let loaded: LoadedRows
    private let rows = NIOLockedValueBox(Rows())
    /// One batch written at a time.
    private let flushing = NIOLock()
    /// What went wrong opening the store (set aside, migrated badly, not writable), to print.
    package let warnings: [String]

    /// Opens (or makes) the store `fileName` in the output directory. A new store takes the
    /// entries of the JSON file `legacyFileName` of earlier versions (which is then removed), or
    /// else of `seed`. `readOnly` (a dry run) changes nothing on disk: a store that is there is
    /// read, and nothing else is (files are then hashed).
    ///
    /// `dests` are the run's: only their rows (and every upload record) are read, each compactly
    /// (``StateRow``), keyed by these very strings; nil reads every row.
    package init(directory: SafeDirectory?, fileName: String = ToolFiles.stateStore,
                legacyFileName: String = ToolFiles.stateCache, seed: Seed? = nil, readOnly: Bool = false,
                dests: [String]? = nil) {
        guard let directory else {
            database = nil
            loaded = LoadedRows()
            warnings = []
            return
        }
        if readOnly {
            database = Self.openExisting(fileName, in: directory)
            loaded = database.map { LoadedRows($0, dests: dests) } ?? LoadedRows()
            warnings = []
            return
        }
        var warnings: [String] = []
        let opened = Self.open(fileName, in: directory, warnings: &warnings)
        if let opened, opened.isNew {
            Self.migrate(into: opened.database, from: legacyFileName, seed: seed, in: directory, warnings: &warnings)
        }
        database = opened?.database
        loaded = opened.map { LoadedRows($0.database, dests: dests) } ?? LoadedRows()
        self.warnings = warnings
    }

    /// The entry for `dest` (relative to the output directory) if the file, whose `lstat` is
    /// `status`, is still the one it describes.
    package func entry(for dest: String, status: stat?) -> Entry? {
        guard let identity = status.map(Self.identity), let entry = recorded(dest), entry.sameFile(as: identity) else { return nil }
        return entry
    }

    /// What is recorded for `dest`, whatever the file is now: recorded in this run and not yet
    /// written, else as the store held it when opened.
    package func recorded(_ dest: String) -> Entry? {
        rows.withLockedValue { $0.pending[dest] ?? $0.writing[dest] } ?? loaded[dest]?.entry
    }

    /// Records a verified file; `digests` must cover it as it is now (`status`).
    package func record(_ dest: String, status: stat?, digests: [String: String], urlSHA256: String?,
                etag: String?, lastModified: String?) {
        guard var entry = status.map(Self.identity) else { return }
        entry.digests = digests
        entry.urlSHA256 = urlSHA256
        entry.etag = etag
        entry.lastModified = lastModified
        record(dest, entry)
    }

    /// Records `entry` for `dest`; a full batch is written.
    package func record(_ dest: String, _ entry: Entry) {
        let full = rows.withLockedValue { rows -> Bool in
            rows.pending[dest] = entry
            return rows.pending.count >= Self.batchSize
        }
        if full { flush() }
    }

    /// Writes what is recorded and not yet written, and folds the write-ahead log into the
    /// database file, so `sqlite3` and the next run find everything in one file.
    package func save() {
        flush()
        _ = try? database?.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// Writes the pending rows in one transaction. In memory only (no store), they stay.
    private func flush() {
        guard let database else { return }
        flushing.withLock {
            let batch = rows.withLockedValue { rows -> [String: Entry] in
                rows.writing = rows.pending
                rows.pending = [:]
                return rows.writing
            }
            guard !batch.isEmpty else { return }
            do {
                try database.write { db in
                    let insert = try db.cachedStatement(sql: Self.insertRow)
                    for (dest, entry) in batch { try insert.execute(arguments: Self.arguments(dest, entry)) }
                }
            } catch {
                // A hint that could not be written (disk full, the file gone): the next run hashes.
            }
            rows.withLockedValue { $0.writing = [:] }
        }
    }

    /// The store's rows for a run's dests, read in one scan (an up-to-date rerun then looks each
    /// file up in memory: a statement per lookup cost it about four times as long), each in one
    /// slot of an array of compact rows.
    private struct LoadedRows: Sendable {
        /// Each dest's slot in ``rows``; -1 for a dest of the run the store has no row for. The
        /// keys are the run's own dest strings, which the jobs hold anyway.
        private var slots: [String: Int32] = [:]
        private var rows: [StateRow] = []

        init() {}

        /// The rows of `dests` and every upload record (keys starting with "/"); every row when
        /// `dests` is nil.
        init(_ database: DatabaseQueue, dests: [String]?) {
            if let dests {
                slots.reserveCapacity(dests.count)
                for dest in dests { slots[dest] = -1 }
            }
            _ = try? database.inDatabase { db in
                let cursor = try Row.fetchCursor(db, sql: StateCache.selectRows)
                while let row = try cursor.next() {
                    let dest: String = row[11]
                    let slot = Int32(rows.count)
                    if dests != nil, !dest.hasPrefix("/") {
                        guard let position = slots.index(forKey: dest) else { continue }  // not a job of this run
                        slots.values[position] = slot
                    } else {
                        slots[dest] = slot
                    }
                    rows.append(StateRow(row))
                }
            }
        }

        subscript(dest: String) -> StateRow? {
            guard let slot = slots[dest], slot >= 0 else { return nil }
            return rows[Int(slot)]
        }
    }

    // MARK: - Rows

    /// Writes one row (``arguments(_:_:)``), for a batch and for a migration alike.
    private static let insertRow = """
        INSERT OR REPLACE INTO files (dest, device, inode, size, mtime_ns, sha256, sha512, sha1, md5,
                                      url_sha256, etag, last_modified)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    /// Every row, in the column order ``StateRow/init(_:)`` reads, the dest last (column 11).
    static let selectRows = """
        SELECT device, inode, size, mtime_ns, sha256, sha512, sha1, md5, url_sha256, etag, last_modified, dest
        FROM files
        """

    /// The digest columns, by algorithm (the closed set a manifest may pin).
    private static let algorithms = ["sha256", "sha512", "sha1", "md5"]

    private static func arguments(_ dest: String, _ entry: Entry) -> StatementArguments {
        var values: [(any DatabaseValueConvertible)?] = [
            dest, Int64(bitPattern: entry.device), Int64(bitPattern: entry.inode), entry.size, entry.mtimeNanoseconds,
        ]
        values += algorithms.map { entry.digests[$0] }
        values += [entry.urlSHA256, entry.etag, entry.lastModified]
        return StatementArguments(values)
    }

    // MARK: - Opening

    /// The store, made if missing; a file that is not one is set aside first.
    private static func open(_ fileName: String, in directory: SafeDirectory,
                             warnings: inout [String]) -> (database: DatabaseQueue, isNew: Bool)? {
        if let status = directory.status(fileName), status.st_mode & S_IFMT != S_IFREG {
            setAside(fileName, in: directory, because: "it is not a regular file", warnings: &warnings)
        }
        let path = directory.path + "/" + fileName
        do {
            return try connect(path)
        } catch StoreProblem.foreign(let why) {
            setAside(fileName, in: directory, because: why, warnings: &warnings)
        } catch {
            setAside(fileName, in: directory, because: "\(error)", warnings: &warnings)
        }
        do {
            return try connect(path)
        } catch {
            warnings.append("cannot use the state store \(path) (\(error)); this run keeps its state in memory")
            return nil
        }
    }

    /// A store that is there and of this version, opened read-only; nil otherwise.
    private static func openExisting(_ fileName: String, in directory: SafeDirectory) -> DatabaseQueue? {
        guard directory.regularFileStatus(fileName) != nil else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let database = try? DatabaseQueue(path: directory.path + "/" + fileName, configuration: configuration),
              let identity = try? database.read({ db in
                  (try Int32.fetchOne(db, sql: "PRAGMA application_id"), try Int.fetchOne(db, sql: "PRAGMA user_version"))
              }),
              identity.0 == applicationID, (1...schemaVersion).contains(identity.1 ?? 0) else { return nil }
        return database
    }

    private enum StoreProblem: Error {
        case foreign(String)
    }

    /// Opens the database at `path`, in WAL mode, and makes its schema when it is new.
    private static func connect(_ path: String) throws -> (database: DatabaseQueue, isNew: Bool) {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        let isNew = try database.writeWithoutTransaction { db -> Bool in
            let application = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
            if application == applicationID && (1..<schemaVersion).contains(version) {
                try db.inTransaction {
                    let before3 = version < 3 ? (version == 2 ? "DROP TABLE trees;" : "") + Self.createTrees + Self.createMultipart : ""
                    try db.execute(sql: before3 + Self.createSignatures + "PRAGMA user_version = \(schemaVersion);")
                    return .commit
                }
            }
            if application == applicationID && (1...schemaVersion).contains(version) {
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                try removeUnfinishedTrees(db)
                return false
            }
            guard application == 0 && version == 0 && tables == 0 else {
                throw StoreProblem.foreign(application == applicationID
                    ? "it is a batchfetch store of another version (\(version))" : "it is not a batchfetch state store")
            }
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.inTransaction {
                try db.execute(sql: """
                    CREATE TABLE files (
                        dest TEXT NOT NULL PRIMARY KEY,
                        device INTEGER NOT NULL,
                        inode INTEGER NOT NULL,
                        size INTEGER NOT NULL,
                        mtime_ns INTEGER NOT NULL,
                        sha256 TEXT,
                        sha512 TEXT,
                        sha1 TEXT,
                        md5 TEXT,
                        url_sha256 TEXT,
                        etag TEXT,
                        last_modified TEXT
                    ) WITHOUT ROWID;
                    \(Self.createTrees)
                    \(Self.createMultipart)
                    \(Self.createSignatures)
                    PRAGMA application_id = \(applicationID);
                    PRAGMA user_version = \(schemaVersion);
                    """)
                return .commit
            }
            return true
        }
        return (database, isNew)
    }

    /// Renames a file that is not a usable store to `<name>.unusable` (replacing an older one),
    /// and its WAL and shared-memory files with it, and says so.
    private static func setAside(_ fileName: String, in directory: SafeDirectory, because why: String,
                                 warnings: inout [String]) {
        try? directory.rename(fileName, to: fileName + ".unusable")
        for suffix in ["-wal", "-shm", "-journal"] { directory.unlink(fileName + suffix) }
        warnings.append("the state store \(directory.path)/\(fileName) was set aside as \(fileName).unusable: \(why); "
            + "files already there are hashed again")
    }

    /// Fills a new store from the JSON file of earlier versions (removed once migrated), or
    /// else from `seed`.
    private static func migrate(into database: DatabaseQueue, from legacyFileName: String, seed: Seed?,
                                in directory: SafeDirectory, warnings: inout [String]) {
        func insert(_ fill: ((String, Entry) -> Void) -> Bool) -> Bool {
            (try? database.write { db -> Bool in
                let statement = try db.cachedStatement(sql: Self.insertRow)
                var failure: (any Error)?
                let read = fill { dest, entry in
                    guard failure == nil else { return }
                    do { try statement.execute(arguments: arguments(dest, entry)) } catch { failure = error }
                }
                if let failure { throw failure }
                return read
            }) ?? false
        }
        if let legacy = directory.contents(legacyFileName, limit: .max) {
            if insert({ each in LegacyStateFile.read(legacy, keeping: { _ in true }, each) }) {
                directory.unlink(legacyFileName)
            } else {
                warnings.append("the old state cache \(directory.path)/\(legacyFileName) could not be read and was left as it is")
            }
            return
        }
        guard let seed else { return }
        if directory.regularFileStatus(seed.fileName) != nil {
            guard let source = openExisting(seed.fileName, in: directory) else { return }
            _ = insert { each in
                (try? source.read { db in
                    let rows = try Row.fetchCursor(db, sql: selectRows)
                    while let row = try rows.next() {
                        let dest: String = row[11]
                        if seed.dests.contains(dest) { each(dest, StateRow(row).entry) }
                    }
                    return true
                }) ?? false
            }
        } else if let legacy = directory.contents(seed.legacyFileName, limit: .max) {
            _ = insert { each in LegacyStateFile.read(legacy, keeping: seed.dests.contains, each) }
        }
    }

    // MARK: - Identity

    /// Whether two `stat`s are of the same, unchanged file (as the store compares them).
    package static func sameFile(_ a: stat, _ b: stat) -> Bool {
        identity(a).sameFile(as: identity(b))
    }

    private static func identity(_ info: stat) -> Entry {
        Entry(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
              mtimeNanoseconds: info.mtimeNanoseconds, digests: [:])
    }
}
