import CBatchFetchSystem
import Foundation

/// Whole directory trees beneath a ``SafeDirectory``, for `extract:`: listed, removed and
/// swapped by descriptor, never following a link (Docs/Archives.md).
extension SafeDirectory {
    /// The names in this directory, `.` and `..` left out, at most `limit` of them; empty when
    /// it cannot be read.
    package func names(limit: Int = .max) -> [String] {
        var names: [String] = []
        forEachName { name in
            names.append(name)
            return names.count < limit
        }
        return names
    }

    /// Calls `body` with each name in this directory (`.` and `..` left out) and its `lstat`,
    /// as `readdir` returns them: a directory of a million names is never listed whole.
    package func forEachStatus(_ body: (String, stat) -> Void) {
        forEachName { name in
            var info = stat()
            if fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { body(name, info) }
            return true
        }
    }

    /// Calls `body` with each name as `readdir` returns it, until it returns false.
    private func forEachName(_ body: (String) -> Bool) {
        let copy = dup(descriptor)
        guard copy >= 0 else { return }
        guard let stream = fdopendir(copy) else {
            close(copy)
            return
        }
        defer { closedir(stream) }
        rewinddir(stream)
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != "..", !body(name) { return }
        }
    }

    /// Removes `name` — a file, a link (never followed) or a whole directory tree. Directories an
    /// archive left without write permission are made writable first. Nothing is there: fine.
    /// A directory is emptied a few thousand names at a time, so a huge one costs no memory.
    package func removeTree(_ name: String) throws(BatchFetchError) {
        if unlinkat(descriptor, name, 0) == 0 || errno == ENOENT { return }
        guard errno == EISDIR || errno == EPERM else { throw FileSink.failure(errno, "cannot remove \(path)/\(name)") }
        let opened = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard opened >= 0 else { throw FileSink.failure(errno, "cannot remove \(path)/\(name)") }
        _ = fchmod(opened, 0o700)
        let inner = SafeDirectory(adopting: opened, path: path + "/" + name)
        while case let children = inner.names(limit: 4096), !children.isEmpty {
            for child in children { try inner.removeTree(child) }
        }
        guard unlinkat(descriptor, name, AT_REMOVEDIR) == 0 || errno == ENOENT else {
            throw FileSink.failure(errno, "cannot remove \(path)/\(name)")
        }
    }

    /// Puts `from` in the place of `to` in one step, the old `to` (if any) now at `from`: true.
    /// False when there was no `to` (then `from` was simply renamed) — nothing left to remove.
    /// Where the kernel cannot exchange, the old `to` is renamed aside first (`to` is missing
    /// for an instant) and is at `from` afterwards all the same.
    package func exchange(_ from: String, with to: String) throws(BatchFetchError) -> Bool {
        #if os(Linux)
        if batchfetch_exchange(descriptor, from, descriptor, to) == 0 { return true }
        if errno == ENOENT {
            try rename(from, to: to)
            return false
        }
        guard errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP else {
            throw FileSink.failure(errno, "cannot put \(path)/\(from) in place of \(to)")
        }
        #endif
        let aside = SafeDirectory.temporaryName(for: to)
        guard renameat(descriptor, to, descriptor, aside) == 0 else {
            if errno == ENOENT {
                try rename(from, to: to)
                return false
            }
            throw FileSink.failure(errno, "cannot move \(path)/\(to) aside")
        }
        try rename(from, to: to)
        try rename(aside, to: from)
        return true
    }
}
