import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// What an extraction wrote, kept in the state store so that a rerun can tell with one `lstat`
/// per entry whether the tree is still the one unpacked from this archive under these settings
/// (Docs/Archives.md, "Reruns"). A file counts as unchanged while its inode, size, mtime (the
/// archive's, set by the writer) and ctime are the ones recorded — any write changes the ctime,
/// and so does putting the mtime back, so a file rewritten in place is caught as the content
/// cache catches it —, a directory while it is a directory, a link while it is the same link
/// (its inode).
///
/// This value is the tree's header; its entries are rows of the store
/// (``StateCache/forEachEntry(of:_:)``), never all in memory: a million-entry archive held
/// them as 850 MB of values and JSON (Docs/StateStore.md).
package struct ExtractedTree: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case file = "f", directory = "d", symlink = "l"
    }

    package struct Entry: Sendable, Equatable {
        /// Relative to the tree; "" for a single decompressed file (the tree is that file).
        package var path: String
        package var kind: Kind
        /// What the entry was when written (its device is not recorded: 0); a directory's is
        /// all 0, a symlink's only its inode.
        package var identity: FileIdentity
        package var size: Int64 { identity.size }
        package var inode: UInt64 { identity.inode }
        package var mtimeNanoseconds: Int64 { identity.mtimeNanoseconds }
        package var ctimeNanoseconds: Int64 { identity.ctimeNanoseconds }

        package init(path: String, kind: Kind, size: Int64, inode: UInt64, mtimeNanoseconds: Int64, ctimeNanoseconds: Int64) {
            self.path = path
            self.kind = kind
            identity = FileIdentity(device: 0, inode: inode, size: size, mtimeNanoseconds: mtimeNanoseconds,
                                    ctimeNanoseconds: ctimeNanoseconds)
        }

        /// An entry for what `status` (an `lstat`) describes at `path`.
        package init(path: String, kind: Kind, status: stat) {
            self.init(path: path, kind: kind, size: kind == .file ? Int64(status.st_size) : 0,
                      inode: kind == .directory ? 0 : UInt64(status.st_ino),
                      mtimeNanoseconds: kind == .file ? status.mtimeNanoseconds : 0,
                      ctimeNanoseconds: kind == .file ? status.ctimeNanoseconds : 0)
        }

        /// The kind an `lstat` describes; nil for what an extraction never makes.
        package static func kind(of status: stat) -> Kind? {
            switch status.st_mode & S_IFMT {
            case S_IFREG: .file
            case S_IFDIR: .directory
            case S_IFLNK: .symlink
            default: nil
            }
        }

        /// Why the entry is not as recorded, given what is there now (nil: `lstat` found
        /// nothing); nil when it is.
        package func difference(from status: stat?) -> String? {
            guard let status else { return "missing" }
            switch kind {
            case .directory:
                return status.st_mode & S_IFMT == S_IFDIR ? nil : "no longer a directory"
            case .symlink:
                return status.st_mode & S_IFMT == S_IFLNK && UInt64(status.st_ino) == inode ? nil : "replaced"
            case .file:
                guard status.st_mode & S_IFMT == S_IFREG, UInt64(status.st_ino) == inode else { return "replaced" }
                return FileIdentity(status).matches(identity, by: .contentAndTouches) ? nil : "changed"
            }
        }
    }

    /// The sha256 of the archive it came from.
    package var archiveSHA256: String
    /// ``Extract/settingsKey`` when it was made: other settings make another tree.
    package var settings: String
    /// The format found (`tar.gz`, `zip`, …).
    package var format: String
    /// The sha256 of the URL the archive came from (``MirrorURL/identity``): with `keep_archive:
    /// false` and no pinned checksum, a rerun knows the tree is this URL's without the archive.
    package var urlSHA256: String?
    /// Regular files written, and their bytes: the report's `files` and `bytes`.
    package var files = 0
    package var bytes: Int64 = 0
    /// Entries recorded (files, directories and links): a record missing rows is not trusted.
    package var entries = 0
    /// The store's key for the entries' rows; 0 while not recorded.
    package var generation: Int64 = 0

    package enum CodingKeys: String, CodingKey {
        case archiveSHA256 = "archive_sha256", settings, format, urlSHA256 = "url_sha256", files, bytes, entries, generation
    }

    package init(archiveSHA256: String, settings: String, format: String, urlSHA256: String?) {
        self.archiveSHA256 = archiveSHA256
        self.settings = settings
        self.format = format
        self.urlSHA256 = urlSHA256
    }

    /// Counts `entry` in the header.
    package mutating func count(_ entry: Entry) {
        entries += 1
        if entry.kind == .file {
            files += 1
            bytes += entry.size
        }
    }

    /// How the tree at `into` (relative to `root`) differs from the record `state` holds of it:
    /// how many entries are not as recorded, and the first `naming` of them with why
    /// (``Entry/difference(from:)``). `stopEarly` ends at the first difference. A record whose
    /// rows cannot all be read counts as one difference: it is not trusted.
    package func differences(in root: SafeDirectory, into: String, state: StateCache, naming: Int = 5,
                     stopEarly: Bool = false) -> (count: Int, named: [(path: String, why: String)]) {
        var count = 0
        var named: [(path: String, why: String)] = []
        var seen = 0
        let read = state.forEachEntry(of: self) { entry in
            seen += 1
            let path = entry.path.isEmpty ? into : into + "/" + entry.path
            var status = stat()
            let found = fstatat(root.descriptor, path, &status, AT_SYMLINK_NOFOLLOW) == 0 ? status : nil
            guard let why = entry.difference(from: found) else { return true }
            count += 1
            if named.count < naming { named.append((entry.path, why)) }
            return !stopEarly
        }
        if !read || (count == 0 && seen != entries) {
            return (count + 1, named.count < naming ? named + [("", "not fully recorded")] : named)
        }
        return (count, named)
    }

    /// Calls `body` with an entry for everything beneath `directory`, depth first, never
    /// following a link, reading each directory as it goes (a million names in one directory are
    /// not listed first). `prefix` is the path of `directory` within the tree.
    package static func walk(_ directory: SafeDirectory, prefix: String = "", _ body: (Entry) -> Void) {
        directory.forEachStatus { name, status in
            guard let kind = Entry.kind(of: status) else { return }
            let path = prefix.isEmpty ? name : prefix + "/" + name
            body(Entry(path: path, kind: kind, status: status))
            if kind == .directory, let inner = try? directory.subdirectory(name, create: false) {
                walk(inner, prefix: path, body)
            }
        }
    }
}
