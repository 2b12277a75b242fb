import Foundation

/// What identifies a file on disk without reading it, from one `stat`, and the one place that
/// says which fields a comparison looks at (swift-nio's `NIOFS/FileInfo` is the model: one type
/// built from `stat`, comparisons named for what they can see). The state store, the content
/// cache and extracted trees each keep these fields and compare them only through
/// ``matches(_:by:)``.
package struct FileIdentity: Sendable, Equatable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var mtimeNanoseconds: Int64
    package var ctimeNanoseconds: Int64

    /// How two identities are compared: each choice says what it cannot see, and who uses it.
    package enum Comparison: Sendable {
        /// Inode, size and mtime to the nanosecond: any write or replacement changes one. The
        /// state store's: it records no ctime (a `chmod` or a new hard link would re-hash the
        /// file), and not the device, which NFS numbers anew on each machine and mount (a
        /// sharded run's shared `output_dir` would be re-hashed on every node).
        case content
        /// Also the ctime, which every write and `utimensat` moves: a rewrite whose mtime was
        /// put back still shows. Extracted trees' files (their device is not recorded).
        case contentAndTouches
        /// Every field, the device too: this very file on this very mount (the content
        /// cache's records, whose entries are shared by every run on the machine).
        case exact
    }

    package init(device: UInt64, inode: UInt64, size: Int64, mtimeNanoseconds: Int64, ctimeNanoseconds: Int64 = 0) {
        self.device = device
        self.inode = inode
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeNanoseconds = ctimeNanoseconds
    }

    package init(_ status: stat) {
        self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size),
                  mtimeNanoseconds: status.mtimeNanoseconds, ctimeNanoseconds: status.ctimeNanoseconds)
    }

    /// Whether `other` is the same, unchanged file as far as `comparison` can see.
    package func matches(_ other: FileIdentity, by comparison: Comparison) -> Bool {
        let content = inode == other.inode && size == other.size && mtimeNanoseconds == other.mtimeNanoseconds
        switch comparison {
        case .content: return content
        case .contentAndTouches: return content && ctimeNanoseconds == other.ctimeNanoseconds
        case .exact: return self == other
        }
    }
}
