import Foundation

/// What is on disk at a path, for `plan` and for the engine's up-to-date and resume checks.
package enum LocalFile {
    /// The size of the regular file at `path` (following symlinks), or nil when there is none.
    package static func regularFileSize(atPath path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }
}
