import Foundation

extension stat {
    /// The modification time in nanoseconds since the epoch: what tells a rewritten file from
    /// an unchanged one (the state store's identity, the content cache's).
    package var mtimeNanoseconds: Int64 {
        #if os(Linux)
        Int64(st_mtim.tv_sec) * 1_000_000_000 + Int64(st_mtim.tv_nsec)
        #else
        Int64(st_mtimespec.tv_sec) * 1_000_000_000 + Int64(st_mtimespec.tv_nsec)
        #endif
    }

    /// The status-change time in nanoseconds since the epoch: changed by every write and every
    /// `utimensat`, so putting the mtime back does not hide a rewrite.
    package var ctimeNanoseconds: Int64 {
        #if os(Linux)
        Int64(st_ctim.tv_sec) * 1_000_000_000 + Int64(st_ctim.tv_nsec)
        #else
        Int64(st_ctimespec.tv_sec) * 1_000_000_000 + Int64(st_ctimespec.tv_nsec)
        #endif
    }
}
