import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation
import NIOConcurrencyHelpers

/// Verified files addressed by their sha256, shared by every run, manifest and process that
/// names the same directory: `<cache>/sha256/<2 hex>/<64 hex>`, a layout any static server can
/// publish as a hash mirror. A job whose sha256 is known before the run is published from here
/// without a request; every verified download enters it. Docs/Cache.md says how it is laid out
/// and why each rule is there.
///
/// Cache bytes are never trusted blindly. Beside each entry, `<64 hex>.verified` records the
/// entry's identity (device, inode, size, mtime, ctime) when its content was last known to
/// have that sha256; an entry whose identity differs (touched, rewritten in place with its size
/// and mtime put back — which changes its ctime —, replaced) is hashed again before use, and
/// one whose content does not match is evicted with a warning, never published. An entry is
/// written under a temporary name and renamed into place, so a reader sees the whole entry or
/// none, and processes filling the same entry at once each rename a whole copy over the other.
/// A cache that cannot be made, read or written never fails a run: it warns once and the run
/// fetches without it.
package final class ContentCache: Sendable {
    /// The cache directory as given (for messages).
    package let path: String
    /// Nil when the directory could not be opened or made.
    private let root: SafeDirectory?
    private let warn: @Sendable (String) -> Void
    /// Set once writing failed (read-only, full, not ours): the rest of the run only reads.
    private let writeFailed = NIOLockedValueBox(false)
    /// Entries this run used or filled whose records are not touched yet: touched in batches
    /// and at the end (``recordUses()``), for `cache gc`'s least-recently-used order.
    private let used = NIOLockedValueBox(Set<String>())
    /// The `sha256/<2 hex>` directories opened so far (``directory(_:create:)``).
    private let directories = NIOLockedValueBox([String: SafeDirectory]())

    /// Opens (or makes) the cache at `path`; `warn` hears what goes wrong, once per kind.
    package init(path: String, warn: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.warn = warn
        do {
            root = try SafeDirectory.root(path, create: true)
        } catch {
            root = nil
            warn("the cache \(path) cannot be used (\(error.message)); this run fetches without it")
        }
    }

    /// Opens the cache at `path` only to look (`plan`, a dry run): nothing is made, written or
    /// evicted.
    package init(lookingAt path: String) {
        self.path = path
        warn = { _ in }
        root = try? SafeDirectory.root(path, create: false)
        writeFailed.withLockedValue { $0 = true }
    }

    /// Whether a run would publish `job` from here (unless `dest` is already up to date): the
    /// entry of the sha256 it is known by (``sha256(of:locked:)``) is there as it was verified.
    /// What `plan` and a dry run report; nothing is read but records.
    package func serves(_ job: Job, locked: String? = nil) -> Bool {
        !job.isUpload && sha256(of: job, locked: locked).map(holds(sha256:)) == true
    }

    /// The sha256 `job`'s content is known by before any request: the lockfile's (`locked`,
    /// under `run --locked`), else its pinned sha256, else the one this cache's index maps
    /// another of its pinned digests to (a hint only: what is published is hashed and held to
    /// the job's own checksums).
    func sha256(of job: Job, locked: String? = nil) -> String? {
        locked ?? job.checksums.first { $0.algorithm == .sha256 }?.hex ?? job.checksums.lazy.compactMap(sha256(for:)).first
    }

    /// Whether the entry of `sha256` is there as it was verified (its recorded identity), without
    /// reading it.
    func holds(sha256: String) -> Bool {
        guard let location = Self.location(sha256), let directory = try? directory(location.directory, create: false),
              let status = directory.regularFileStatus(location.name) else { return false }
        return Identity.recorded(in: directory, for: location.name) == Identity(status)
    }

    /// An entry opened for reading, its content known to have `sha256`.
    final class File: Sendable {
        let descriptor: Int32
        /// The path, for messages.
        let path: String
        /// Where the entry is, for a hard link to it (`cache_link: hardlink`).
        let directory: SafeDirectory
        let name: String
        fileprivate let identity: Identity
        var inode: UInt64 { identity.inode }
        var size: Int64 { identity.size }

        fileprivate init(descriptor: Int32, identity: Identity, directory: SafeDirectory, name: String, path: String) {
            self.descriptor = descriptor
            self.identity = identity
            self.directory = directory
            self.name = name
            self.path = path
        }

        deinit {
            close(descriptor)
        }

        /// Whether the entry is still what was checked when it was opened (nobody wrote it since).
        var isUnchanged: Bool {
            var status = stat()
            return fstat(descriptor, &status) == 0 && Identity(status) == identity
        }
    }

    /// The entry for `sha256` (64 lowercase hex digits), checked: nil when there is none, or it
    /// is not a regular file, or its content turned out not to match (then it is evicted).
    func file(sha256: String) -> File? {
        guard let location = Self.location(sha256), let directory = try? directory(location.directory, create: false) else {
            return nil
        }
        let descriptor = openat(directory.descriptor, location.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return nil
        }
        let file = File(descriptor: descriptor, identity: Identity(status), directory: directory,
                        name: location.name, path: "\(path)/\(location.directory)/\(location.name)")
        if let record = Identity.record(in: directory, for: location.name), record.identity == file.identity {
            // A use within the last half day is recent enough for `gc`: no touch.
            if Int(Date().timeIntervalSince1970) - record.touched > 43_200 { noteUse(sha256) }
            return file
        }
        // Not known as it is now: hashed again.
        let hashed = try? Digester.digests(ofDescriptor: descriptor).digests["sha256"]
        let unchanged = file.isUnchanged
        guard hashed == sha256, unchanged else {
            // Evicted only while the name is still this file (another process may have just
            // renamed a good copy over it).
            if hashed != nil, unchanged, directory.status(location.name)?.st_ino == status.st_ino {
                Self.remove(location.name, in: directory)
                warn("the cache entry \(file.path) was corrupt (its content's sha256 is \(hashed ?? "")); it was evicted")
            }
            return nil
        }
        record(file.identity, of: location.name, in: directory)
        noteUse(sha256)
        return file
    }

    /// Notes that the run used or filled the entry of `sha256`; the records of a full batch
    /// (``usesPerBatch``) are touched now, so that a million-file run holds no more than that.
    private func noteUse(_ sha256: String) {
        let batch = used.withLockedValue { used -> Set<String>? in
            used.insert(sha256)
            guard used.count >= Self.usesPerBatch else { return nil }
            defer { used = [] }
            return used
        }
        if let batch { touchRecords(of: batch) }
    }

    private static let usesPerBatch = 4096

    /// Renews the record of `file` after a hard link to it changed its ctime (and link count)
    /// and nothing else: without this every hard-linked entry would be hashed again at its next
    /// use. Only when inode, size and mtime are still those checked before the link.
    func linked(_ file: File) {
        var status = stat()
        guard fstat(file.descriptor, &status) == 0 else { return }
        let now = Identity(status)
        guard now.file.matches(file.identity.file, by: .content) else { return }
        rewriteRecord(now, of: file.name, in: file.directory)
    }

    /// Touches the records of the entries this run used or filled and has not touched yet: their
    /// last use, one `utimensat` each, in batches rather than a write per hit.
    package func recordUses() {
        touchRecords(of: used.withLockedValue { used in
            defer { used = [] }
            return used
        })
    }

    private func touchRecords(of uses: Set<String>) {
        guard !writeFailed.withLockedValue({ $0 }) else { return }
        let now = Date()
        for sha256 in uses {
            guard let location = Self.location(sha256), let directory = try? directory(location.directory, create: false) else {
                continue
            }
            CacheInventory.setModified(directory, location.name + Identity.suffix, to: now)
        }
    }

    /// Enters the file open at `descriptor` (a file whose digests are `digests`, sha256 among
    /// them, taken when its status was `verified`) unless the cache already has it, and indexes
    /// its other digests (``sha256(for:)``). The file must still be the one hashed before and
    /// after the copy (nobody wrote it meanwhile), else nothing enters. `name` is for messages.
    func insert(digests: [String: String], from descriptor: Int32, verified: stat, name: String) {
        let stillVerified = {
            var now = stat()
            return fstat(descriptor, &now) == 0 && StateCache.sameFile(now, verified)
        }
        guard !writeFailed.withLockedValue({ $0 }), stillVerified(), let sha256 = digests["sha256"],
              let location = Self.location(sha256) else {
            return
        }
        do throws(BatchFetchError) {
            guard let directory = try directory(location.directory, create: true) else { return }
            defer { index(digests, as: sha256) }
            if let status = directory.regularFileStatus(location.name),
               Identity.recorded(in: directory, for: location.name) == Identity(status) {
                noteUse(sha256)
                return
            }
            let temporary = SafeDirectory.temporaryName(for: location.name)
            let output = try directory.openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o444)
            defer { close(output) }
            do throws(BatchFetchError) {
                try FileCopy.copy(from: descriptor, to: output, names: (name, "\(path)/\(location.directory)/\(temporary)"))
                guard stillVerified() else {
                    directory.unlink(temporary)
                    return
                }
                try directory.rename(temporary, to: location.name)
            } catch {
                directory.unlink(temporary)
                throw error
            }
            var status = stat()
            if fstat(output, &status) == 0 { record(Identity(status), of: location.name, in: directory) }
            noteUse(sha256)
        } catch {
            let first = writeFailed.withLockedValue { failed in
                defer { failed = true }
                return !failed
            }
            if first { warn("the cache \(path) cannot be written (\(error.message)); this run does not fill it") }
        }
    }

    /// The sha256 of the content the cache verified as having `checksum` (another algorithm),
    /// from its index `<algorithm>/<2 hex>/<hex>`. A hint only: a job published from the entry
    /// it names is still held to its own checksum, hashed from the copy.
    func sha256(for checksum: Checksum) -> String? {
        guard let location = Self.indexLocation(checksum), let directory = try? directory(location.directory, create: false),
              let data = directory.contents(location.name, limit: 128) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Self.location(text) != nil ? text : nil
    }

    /// Indexes each digest of `digests` besides sha256 as naming `sha256`.
    private func index(_ digests: [String: String], as sha256: String) {
        for (name, hex) in digests where name != "sha256" {
            guard let algorithm = Checksum.Algorithm(rawValue: name),
                  let location = Self.indexLocation(Checksum(algorithm: algorithm, hex: hex)),
                  let directory = try? directory(location.directory, create: true),
                  directory.contents(location.name, limit: 128) != Data((sha256 + "\n").utf8) else { continue }
            try? directory.writeAtomically(location.name, Data((sha256 + "\n").utf8))
        }
    }

    /// Where the index file of a digest of another algorithm than sha256 lives; nil for sha256
    /// or for anything but lowercase hex of the algorithm's length.
    static func indexLocation(_ checksum: Checksum) -> (directory: String, name: String)? {
        let hex = checksum.hex
        guard checksum.algorithm != .sha256, isLowercaseHex(hex, digits: checksum.algorithm.hexLength) else { return nil }
        return ("\(checksum.algorithm.rawValue)/" + hex.prefix(2), hex)
    }

    /// The directory `relative` (`sha256/<2 hex>`), opened once per run: there are 256 of them,
    /// and a walk from the root for each job was two `openat`s and two `close`s a file. A
    /// directory replaced while the run holds it costs at most its entries for this run: every
    /// entry is still checked by its identity or its hash.
    private func directory(_ relative: String, create: Bool) throws(BatchFetchError) -> SafeDirectory? {
        if let open = directories.withLockedValue({ $0[relative] }) { return open }
        guard let root, let opened = try root.subdirectory(relative, create: create) else { return nil }
        directories.withLockedValue { $0[relative] = opened }
        return opened
    }

    /// Records that the entry `name` had its sha256 when its identity was `identity`.
    private func record(_ identity: Identity, of name: String, in directory: SafeDirectory) {
        try? directory.writeAtomically(name + Identity.suffix, identity.text)
    }

    /// Rewrites the record of `name` in place (no new file: a temporary and a rename cost each
    /// hard-linked job of a batch of small files an inode): a record is a hint, and one torn by
    /// a crash or by two writers at once reads as none, or as an identity no entry has, and the
    /// entry is hashed again. Falls back to ``record(_:of:in:)`` when there is no record.
    private func rewriteRecord(_ identity: Identity, of name: String, in directory: SafeDirectory) {
        guard let descriptor = try? directory.openFile(name + Identity.suffix, O_WRONLY) else {
            record(identity, of: name, in: directory)
            return
        }
        defer { close(descriptor) }
        let text = identity.text
        let written = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        if written != text.count || ftruncate(descriptor, off_t(text.count)) != 0 { directory.unlink(name + Identity.suffix) }
    }

    /// Where the entry of `sha256` lives, relative to the cache; nil for anything but 64
    /// lowercase hex digits (which could name something else).
    static func location(_ sha256: String) -> (directory: String, name: String)? {
        guard isLowercaseHex(sha256, digits: 64) else { return nil }
        return ("sha256/" + sha256.prefix(2), sha256)
    }

    /// Whether `text` is exactly `digits` lowercase hex digits: the only names the cache makes.
    private static func isLowercaseHex(_ text: String, digits: Int) -> Bool {
        text.utf8.count == digits && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Removes the entry `name` of `directory` and its record (an eviction, `cache rm`, `gc`).
    static func remove(_ name: String, in directory: SafeDirectory) {
        directory.unlink(name)
        directory.unlink(name + Identity.suffix)
    }
}

extension ContentCache {
    /// What identifies an entry's content on disk without reading it: any write, replacement or
    /// touch changes one of these (ctime changes with every write and every `utimensat`, so
    /// putting the mtime back does not hide a rewrite).
    struct Identity: Equatable, Sendable {
        /// The entry's identity, compared whole (``FileIdentity/Comparison/exact``: the synthesized
        /// `==`).
        var file: FileIdentity
        var inode: UInt64 { file.inode }
        var size: Int64 { file.size }

        /// The record's file name beside its entry.
        static let suffix = ".verified"

        init(_ status: stat) {
            file = FileIdentity(status)
        }

        private init(fields: [Int64]) {
            file = FileIdentity(device: UInt64(bitPattern: fields[0]), inode: UInt64(bitPattern: fields[1]), size: fields[2],
                                mtimeNanoseconds: fields[3], ctimeNanoseconds: fields[4])
        }

        /// One line: `device inode size mtime_ns ctime_ns`, then when it was recorded (for people).
        var text: Data {
            let fields = [Int64(bitPattern: file.device), Int64(bitPattern: file.inode), file.size, file.mtimeNanoseconds,
                          file.ctimeNanoseconds]
            return Data((fields.map(String.init).joined(separator: " ") + " " + UTCTime.rfc3339(Date()) + "\n").utf8)
        }

        /// The identity recorded for the entry `name`, if a readable record is there.
        static func recorded(in directory: SafeDirectory, for name: String) -> Identity? {
            record(in: directory, for: name)?.identity
        }

        /// The identity recorded for the entry `name`, and when its record was last touched
        /// (the entry's last use, seconds since the epoch): one open, `fstat` and read.
        static func record(in directory: SafeDirectory, for name: String) -> (identity: Identity, touched: Int)? {
            guard let descriptor = try? directory.openFile(name + suffix, O_RDONLY) else { return nil }
            defer { close(descriptor) }
            var status = stat()
            var bytes = [UInt8](repeating: 0, count: 256)
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            let fields = String(decoding: bytes[..<count], as: UTF8.self).split(separator: " ").prefix(5).compactMap { Int64($0) }
            return fields.count == 5 ? (Identity(fields: fields), Int(status.mtimeNanoseconds / 1_000_000_000)) : nil
        }
    }
}
