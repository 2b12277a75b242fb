import BatchFetchSpec
import Foundation

/// What an extraction wrote, kept in the state store so that a rerun can tell with one `lstat`
/// per entry whether the tree is still the one unpacked from this archive under these settings
/// (Docs/Archives.md, "Reruns"). A file counts as unchanged while its inode, size, mtime (the
/// archive's, set by the writer) and ctime are the ones recorded — any write changes the ctime,
/// and so does putting the mtime back, so a file rewritten in place is caught as the content
/// cache catches it —, a directory while it is a directory, a link while it is the same link
/// (its inode).
struct ExtractedTree: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
        case file = "f", directory = "d", symlink = "l"
    }

    struct Entry: Codable, Sendable, Equatable {
        /// Relative to the tree; "" for a single decompressed file (the tree is that file).
        var path: String
        var kind: Kind
        var size: Int64
        var inode: UInt64
        var mtimeNanoseconds: Int64
        var ctimeNanoseconds: Int64

        enum CodingKeys: String, CodingKey {
            case path = "p", kind = "k", size = "s", inode = "i", mtimeNanoseconds = "m", ctimeNanoseconds = "c"
        }

        /// An entry for what `status` (an `lstat`) describes at `path`.
        init(path: String, kind: Kind, status: stat) {
            self.path = path
            self.kind = kind
            size = kind == .file ? Int64(status.st_size) : 0
            inode = kind == .directory ? 0 : UInt64(status.st_ino)
            mtimeNanoseconds = kind == .file ? status.mtimeNanoseconds : 0
            ctimeNanoseconds = kind == .file ? status.ctimeNanoseconds : 0
        }

        /// Why the entry is not as recorded, given what is there now (nil: `lstat` found
        /// nothing); nil when it is.
        func difference(from status: stat?) -> String? {
            guard let status else { return "missing" }
            switch kind {
            case .directory:
                return status.st_mode & S_IFMT == S_IFDIR ? nil : "no longer a directory"
            case .symlink:
                return status.st_mode & S_IFMT == S_IFLNK && UInt64(status.st_ino) == inode ? nil : "replaced"
            case .file:
                guard status.st_mode & S_IFMT == S_IFREG, UInt64(status.st_ino) == inode else { return "replaced" }
                return Int64(status.st_size) == size && status.mtimeNanoseconds == mtimeNanoseconds
                    && status.ctimeNanoseconds == ctimeNanoseconds ? nil : "changed"
            }
        }
    }

    /// The sha256 of the archive it came from.
    var archiveSHA256: String
    /// ``Extract/settingsKey`` when it was made: other settings make another tree.
    var settings: String
    /// The format found (`tar.gz`, `zip`, …).
    var format: String
    /// The sha256 of the URL the archive came from (``Mirror/identity``): with `keep_archive:
    /// false` and no pinned checksum, a rerun knows the tree is this URL's without the archive.
    var urlSHA256: String?
    var entries: [Entry]

    enum CodingKeys: String, CodingKey {
        case archiveSHA256 = "archive_sha256", settings, format, urlSHA256 = "url_sha256", entries
    }

    /// Regular files written, and their bytes: the report's `files` and `bytes`.
    var files: Int { entries.count { $0.kind == .file } }
    var bytes: Int64 { entries.reduce(0) { $0 + ($1.kind == .file ? $1.size : 0) } }

    /// The entries that are not as recorded in the tree `into` (relative to `root`), each with
    /// why (``Entry/difference(from:)``). Empty when the tree is whole; `limit` stops early.
    func differences(in root: SafeDirectory, into: String, limit: Int = Int.max) -> [(path: String, why: String)] {
        var differing: [(path: String, why: String)] = []
        for entry in entries {
            let path = entry.path.isEmpty ? into : into + "/" + entry.path
            var status = stat()
            let found = fstatat(root.descriptor, path, &status, AT_SYMLINK_NOFOLLOW) == 0 ? status : nil
            if let why = entry.difference(from: found) {
                differing.append((entry.path, why))
                if differing.count >= limit { break }
            }
        }
        return differing
    }
}
