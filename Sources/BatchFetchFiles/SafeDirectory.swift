import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// An open directory at or beneath the output directory, reached without following symbolic
/// links: every file the run creates is opened relative to one of these.
///
/// Why descriptors and not paths: validation checks that no parent of a dest is a symlink, but
/// a directory can be swapped for a symlink to `/outside` while the run goes on. Paths would
/// follow it; `openat` with `O_NOFOLLOW | O_DIRECTORY`, one component at a time from the output
/// directory's descriptor (opened once), refuses it (`unsafe_path`), and files inside are opened
/// with `O_NOFOLLOW` (a symlink planted at `x.part` is not written through). A descriptor keeps
/// naming the directory it opened, whatever is renamed around it later.
package final class SafeDirectory: Sendable {
    package let descriptor: Int32
    /// The directory's path, for messages only.
    package let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Takes over `descriptor`, a directory opened without following links.
    package convenience init(adopting descriptor: Int32, path: String) {
        self.init(descriptor: descriptor, path: path)
    }

    deinit {
        close(descriptor)
    }

    /// Opens the output directory itself (creating it first when `create`). The output
    /// directory is the user's choice, so a symlink there is followed; nothing below it is.
    package static func root(_ path: String, create: Bool) throws(BatchFetchError) -> SafeDirectory {
        if create {
            var prefix = path.hasPrefix("/") ? "" : "."
            for component in path.split(separator: "/") {
                prefix += "/" + component
                if mkdir(prefix, 0o755) != 0 && errno != EEXIST { throw FileSink.failure(errno, "cannot create \(prefix)") }
            }
        }
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileSink.failure(errno, "cannot open the output directory \(path)") }
        return SafeDirectory(descriptor: descriptor, path: path)
    }

    /// The directory at `relative` (components separated by `/`; "" is this one), opened one
    /// component at a time without following symlinks; missing components are made when
    /// `create`. Returns nil when a component does not exist and `create` is false.
    package func subdirectory(_ relative: String, create: Bool) throws(BatchFetchError) -> SafeDirectory? {
        var current = self
        var shown = path
        for component in relative.split(separator: "/") {
            let name = String(component)
            shown += "/" + name
            if create, mkdirat(current.descriptor, name, 0o755) != 0, errno != EEXIST {
                throw FileSink.failure(errno, "cannot create \(shown)")
            }
            let next = openat(current.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                if errno == ENOENT && !create { return nil }
                if errno == ELOOP || errno == ENOTDIR {
                    throw BatchFetchError(.unsafePath, "\(shown) is a symbolic link or not a directory; refusing to write through it")
                }
                throw FileSink.failure(errno, "cannot open \(shown)")
            }
            current = SafeDirectory(descriptor: next, path: shown)
        }
        return current
    }

    /// Opens `name` in this directory, never through a symlink (`unsafe_path` when it is one).
    package func openFile(_ name: String, _ flags: Int32, mode: mode_t = 0o644) throws(BatchFetchError) -> Int32 {
        let descriptor = openat(self.descriptor, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            if errno == ELOOP {
                throw BatchFetchError(.unsafePath, "\(path)/\(name) is a symbolic link; refusing to open it")
            }
            throw FileSink.failure(errno, "cannot open \(path)/\(name)")
        }
        return descriptor
    }

    /// A new file in this directory without a name (`O_TMPFILE`), open for reading and writing,
    /// for ``link(_:as:)`` to name once its bytes are verified; nil where that is not possible
    /// (not Linux, a file system without `O_TMPFILE`, a kernel that refuses to link it).
    ///
    /// Why: a small download written to `<dest>.part` and renamed costs two changes to the
    /// directory (the create and the rename) where curl makes one; an unnamed file costs one (the
    /// link), and a kill leaves nothing behind; many small files cost markedly less CPU this way
    /// (bench/results/profile.md, bench/results/history.md).
    ///
    /// `toLink: false` asks only for the file, never to be linked (a scratch file gone with the
    /// process, such as the report's journal), where the kernel's permission to link is moot.
    package func openUnnamed(toLink: Bool = true, mode: mode_t = 0o644) -> Int32? {
        #if os(Linux)
        guard !toLink || linksOpenFiles else { return nil }
        let descriptor = openat(self.descriptor, ".", Self.unnamedFileFlag | O_RDWR | O_CLOEXEC, mode)
        return descriptor >= 0 ? descriptor : nil
        #else
        return nil
        #endif
    }

    /// Names the file open at `file` — an unnamed one (``openUnnamed()``), or a part published
    /// from its descriptor — `name` in this directory, replacing whatever is there (a file, or a
    /// symlink planted there, never followed) the way ``rename(_:to:)`` does: a link where the
    /// name is free, else a link under a temporary name and a rename over it. With
    /// `replacing: false` a name that is taken fails the call.
    package func link(_ file: Int32, as name: String, replacing: Bool = true) throws(BatchFetchError) {
        #if os(Linux)
        if linkat(file, "", descriptor, name, Self.emptyPathFlag) == 0 { return }
        guard errno == EEXIST, replacing else { throw FileSink.failure(errno, "cannot link \(path)/\(name)") }
        let temporary = Self.temporaryName(for: name)
        guard linkat(file, "", descriptor, temporary, Self.emptyPathFlag) == 0 else {
            throw FileSink.failure(errno, "cannot link \(path)/\(name)")
        }
        guard renameat(descriptor, temporary, descriptor, name) == 0 else {
            let failure = FileSink.failure(errno, "cannot replace \(path)/\(name)")
            unlink(temporary)
            throw failure
        }
        #else
        throw BatchFetchError(.ioError, "cannot link \(path)/\(name): no unnamed files on this system")
        #endif
    }

    /// Whether ``link(_:as:replacing:)`` can name a file by its descriptor here (see
    /// `linksUnnamedFiles`): false off Linux.
    package var linksOpenFiles: Bool {
        #if os(Linux)
        Self.linksUnnamedFiles(in: self)
        #else
        false
        #endif
    }

    #if os(Linux)
    /// `O_TMPFILE` and `AT_EMPTY_PATH` (Linux's values on every architecture), which Glibc's
    /// Swift module leaves out: they need `_GNU_SOURCE`.
    private static let unnamedFileFlag: Int32 = 0o20000000 | O_DIRECTORY
    private static let emptyPathFlag: Int32 = 0x1000

    /// Whether this process may link its unnamed files: recent kernels (6.10 on, checked here on
    /// 6.18 as an unprivileged user) let a process link a file it opened itself; older ones
    /// require `CAP_DAC_READ_SEARCH` (and refuse with `ENOENT`). The version does not matter:
    /// probed once per process, with a file of its own linked under a temporary name and
    /// removed again, in the first directory that asks.
    private static func linksUnnamedFiles(in directory: SafeDirectory) -> Bool {
        unnamedProbe.withLockedValue { known in
            if let known { return known }
            var linked = false
            if let file = directory.openUnnamed(toLink: false) {
                let name = Self.temporaryName(for: "batchfetch-probe")
                linked = linkat(file, "", directory.descriptor, name, emptyPathFlag) == 0
                if linked { directory.unlink(name) }
                close(file)
            }
            known = linked
            return linked
        }
    }

    private static let unnamedProbe = NIOLockedValueBox<Bool?>(nil)
    #endif

    /// A hidden name for a temporary file beside `name`, unique to this process and call (its pid
    /// and a random number): what atomic replacements, links over an existing file and scratch
    /// files are made under.
    package static func temporaryName(for name: String) -> String {
        DestPath.temporaryName(for: name, tag: "\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    }

    /// Whether `name` is a temporary file (``temporaryName(for:)``: `.<name>.<pid>-<number>.tmp`)
    /// of a process that no longer runs: killed between making the file and renaming it. Not
    /// this process's, nor a running one's (another batchfetch on a nested output directory).
    package static func isLeftoverTemporary(_ name: String) -> Bool {
        guard name.hasPrefix("."), name.hasSuffix(".tmp") else { return false }
        let stem = name.dropLast(4)
        guard let dot = stem.lastIndex(of: ".") else { return false }
        let tag = stem[stem.index(after: dot)...].split(separator: "-", omittingEmptySubsequences: false)
        guard tag.count == 2, tag.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let pid = pid_t(tag[0]), pid > 0, pid != getpid(), UInt32(tag[1]) != nil else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// `lstat` of `name`: a symlink is reported as itself, never followed.
    package func status(_ name: String) -> stat? {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// `lstat` of `name` when it is a regular file (not a symlink to one).
    package func regularFileStatus(_ name: String) -> stat? {
        guard let info = status(name), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return info
    }

    /// Size of `name` when it is a regular file (not a symlink to one).
    package func regularFileSize(_ name: String) -> Int64? {
        regularFileStatus(name).map { Int64($0.st_size) }
    }

    package func unlink(_ name: String) {
        _ = unlinkat(descriptor, name, 0)
    }

    /// Renames `from` to `to` within this directory; a symlink at `to` is replaced, not followed.
    package func rename(_ from: String, to: String) throws(BatchFetchError) {
        guard renameat(descriptor, from, descriptor, to) == 0 else {
            throw FileSink.failure(errno, "cannot rename \(path)/\(from) to \(to)")
        }
    }

    /// The whole content of the regular file `name` (at most `limit` bytes), or nil.
    package func contents(_ name: String, limit: Int = 64 << 20) -> Data? {
        read(name, limit: limit).data
    }

    /// The content as ``contents(_:limit:)`` reads it, and whether there is no `name` at all
    /// (as opposed to one that cannot be read or used).
    package func read(_ name: String, limit: Int) -> (data: Data?, missing: Bool) {
        let descriptor = openat(self.descriptor, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return (nil, errno == ENOENT) }
        return (contents(of: descriptor, limit: limit), false)
    }

    private func contents(of descriptor: Int32, limit: Int) -> Data? {
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= limit else { return nil }
        var data = Data(count: Int(info.st_size))
        let count = data.count
        let read = data.withUnsafeMutableBytes { FileSink.preadFully(descriptor, $0.baseAddress!, count, at: 0) }
        return read == count ? data : nil
    }

    /// Replaces `name` with `data` atomically: written to a fresh temporary file (`O_EXCL`,
    /// never through a symlink) and renamed over it, so a kill at any instant leaves the old or
    /// the new content, never a torn one. No fsync unless `sync`: sidecars and the state cache
    /// are hints, and an fsync per file costs milliseconds each (bench/results/history.md).
    package func writeAtomically(_ name: String, _ data: Data, sync: Bool = false) throws(BatchFetchError) {
        try writeAtomically(name, sync: sync) { (writer: inout FileWriter) throws(BatchFetchError) in try writer.write(data) }
    }

    /// Replaces `name` atomically (as ``writeAtomically(_:_:sync:)``) with what `body` writes
    /// as a stream, so a large file is never whole in memory. A failure in `body` leaves the old
    /// file.
    package func writeAtomically(_ name: String, sync: Bool = false,
                                _ body: (inout FileWriter) throws(BatchFetchError) -> Void) throws(BatchFetchError) {
        let temporary = Self.temporaryName(for: name)
        let descriptor = try openFile(temporary, O_WRONLY | O_CREAT | O_EXCL)
        do throws(BatchFetchError) {
            var writer = FileWriter(descriptor: descriptor, name: "\(path)/\(name)")
            try body(&writer)
            try writer.flush()
            if sync && fsync(descriptor) != 0 { throw FileSink.failure(errno, "cannot write \(path)/\(name)") }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        do {
            try rename(temporary, to: name)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Replaces the file at `path` atomically (see ``writeAtomically(_:_:sync:)``), creating its
    /// directory first: for reports, lockfiles and JUnit files, whose paths the user chooses.
    package static func writeAtomically(path: String, _ data: Data) throws(BatchFetchError) {
        try writeAtomically(path: path) { (writer: inout FileWriter) throws(BatchFetchError) in try writer.write(data) }
    }

    /// Replaces the file at `path` atomically with what `body` writes (see
    /// ``writeAtomically(_:sync:_:)``), creating its directory first.
    package static func writeAtomically(path: String,
                                       _ body: (inout FileWriter) throws(BatchFetchError) -> Void) throws(BatchFetchError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty else { throw BatchFetchError(.ioError, "\(path) names a directory, not a file") }
        try root(directory, create: true).writeAtomically(name, body)
    }

    /// fsync of the directory itself, so renames in it are durable (durability `strict`).
    package func sync() {
        fsync(descriptor)
    }
}
