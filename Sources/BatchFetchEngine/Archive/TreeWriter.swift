import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// Writes an archive's entries beneath a fresh directory (the tree's temporary sibling),
/// through the same descriptor walk downloads use: every directory is opened one component at
/// a time with `O_NOFOLLOW`, every file created with `O_EXCL | O_NOFOLLOW`, so no entry — and
/// no link an earlier entry planted — can make a write land outside. What ``EntryPath`` refuses
/// fails the extraction with `unsafe_archive` naming the entry; the caps are checked as the
/// bytes stream, so a bomb stops at the cap (Docs/Archives.md).
///
/// Modes come from the archive without setuid, setgid and sticky bits and under the umask;
/// mtimes from the archive; owners never. Directories get their modes and mtimes last, deepest
/// first, once nothing more is written into them.
///
/// What earlier entries made is asked of the tree itself (an `lstat`), not kept: the tree is a
/// fresh directory only this writer writes into, so what is there is the archive's, and a
/// million entries cost no memory (only directories' modes and mtimes are kept, as GNU tar and
/// bsdtar keep them).
struct TreeWriter {
    private let root: SafeDirectory
    private let extract: Extract
    private let format: Extract.Format
    private let sizeCap: Int64
    private let umask: mode_t
    /// The archive's name, for messages.
    private let archiveName: String
    /// Hears the entries read and bytes written after each entry (the run's progress).
    private let progress: JobProgress?

    /// Directory entries' modes and mtimes, applied by ``finish()``.
    private var directoryAttributes: [(path: String, mode: mode_t, mtime: timespec?)] = []
    private(set) var bytesWritten: Int64 = 0
    private(set) var entriesSeen = 0
    /// The directory written last, kept open: entries of one directory come together.
    private var current: (path: String, directory: SafeDirectory)?

    init(root: SafeDirectory, extract: Extract, format: Extract.Format, archiveSize: Int64, archiveName: String,
         progress: JobProgress? = nil) {
        self.progress = progress
        self.root = root
        self.extract = extract
        self.format = format
        sizeCap = extract.sizeCap(archiveSize: archiveSize)
        umask = Self.processUmask
        self.archiveName = archiveName
    }

    /// Writes the entry `reader` is at (its header is `entry`), its data read from `reader`.
    mutating func write(_ entry: ArchiveReader.Entry, from reader: ArchiveReader) throws(BatchFetchError) {
        entriesSeen += 1
        defer { progress?.unpacked(entries: entriesSeen, bytes: bytesWritten) }
        if entriesSeen > extract.maxEntries {
            throw BatchFetchError(.archiveTooLarge, "\(archiveName) has more than \(extract.maxEntries) entries (max_entries)")
        }
        let components: [String]
        switch EntryPath.place(entry.path, format: format, extract: extract) {
        case .skip: return
        case .unsafe(let reason): throw unsafe(entry, reason)
        case .write(let parts): components = parts
        }
        let path = components.joined(separator: "/")
        switch entry.kind {
        case .device, .fifo, .socket, .unknown:
            let what = [ArchiveReader.Kind.device: "a device node", .fifo: "a FIFO", .socket: "a socket"][entry.kind] ?? "of an unknown type"
            throw unsafe(entry, "is \(what)")
        case .directory:
            try makeDirectory(components, entry: entry)
            directoryAttributes.append((path, entry.mode, entry.mtime))
        case .file:
            try writeFile(components, path: path, entry: entry, reader: reader)
        case .symlink:
            if let problem = EntryPath.symlinkProblem(target: entry.target ?? "", at: components) { throw unsafe(entry, problem) }
            try writeSymlink(components, path: path, entry: entry)
        case .hardlink:
            try writeHardLink(components, path: path, entry: entry)
        }
    }

    /// Applies the directories' modes and mtimes, deepest first.
    mutating func finish() {
        current = nil
        for (path, mode, mtime) in directoryAttributes.sorted(by: { $0.path.count > $1.path.count }) {
            _ = fchmodat(root.descriptor, path, mode & 0o777 & ~umask, 0)
            if let mtime {
                var times = [Self.keepAccessTime, mtime]
                _ = utimensat(root.descriptor, path, &times, AT_SYMLINK_NOFOLLOW)
            }
        }
    }

    // MARK: - Kinds

    private mutating func makeDirectory(_ components: [String], entry: ArchiveReader.Entry) throws(BatchFetchError) {
        let parent = try parent(of: components, entry: entry)
        if let earlier = parent.status(components.last!).flatMap(ExtractedTree.Entry.kind(of:)), earlier != .directory {
            throw duplicate(entry, was: earlier, now: .directory)
        }
        _ = try directory(components, entry: entry)
    }

    private mutating func writeFile(_ components: [String], path: String, entry: ArchiveReader.Entry,
                                    reader: ArchiveReader) throws(BatchFetchError) {
        if entry.size > 0, bytesWritten + entry.size > sizeCap { throw tooLarge() }
        let directory = try parent(of: components, entry: entry)
        let name = components.last!
        try replaceable(path, name: name, in: directory, entry: entry, as: .file)
        let output = try directory.openFile(name, O_WRONLY | O_CREAT | O_EXCL, mode: entry.mode & 0o777)
        defer { close(output) }
        var end: Int64 = 0
        let cap = sizeCap
        var total = bytesWritten
        try reader.readData { (bytes: UnsafeRawBufferPointer, offset: Int64) throws(BatchFetchError) in
            total += Int64(bytes.count)
            if total > cap { throw tooLarge() }
            guard FileSink.pwriteFully(output, bytes, at: offset) else { throw FileSink.failure(errno, "cannot write \(root.path)/\(path)") }
            end = max(end, offset + Int64(bytes.count))
        }
        bytesWritten = total
        // A sparse entry ends in a hole; a zip entry's size may be known only from its data.
        if entry.size > end, ftruncate(output, off_t(entry.size)) != 0 {
            throw FileSink.failure(errno, "cannot write \(root.path)/\(path)")
        }
        if let mtime = entry.mtime {
            var times = [Self.keepAccessTime, mtime]
            _ = futimens(output, &times)
        }
    }

    private mutating func writeSymlink(_ components: [String], path: String, entry: ArchiveReader.Entry) throws(BatchFetchError) {
        let directory = try parent(of: components, entry: entry)
        let name = components.last!
        try replaceable(path, name: name, in: directory, entry: entry, as: .symlink)
        guard symlinkat(entry.target ?? "", directory.descriptor, name) == 0 else {
            throw FileSink.failure(errno, "cannot make the link \(root.path)/\(path)")
        }
        if let mtime = entry.mtime {
            var times = [Self.keepAccessTime, mtime]
            _ = utimensat(directory.descriptor, name, &times, AT_SYMLINK_NOFOLLOW)
        }
    }

    /// A hard link may only name a regular file this archive itself wrote into the tree.
    private mutating func writeHardLink(_ components: [String], path: String, entry: ArchiveReader.Entry) throws(BatchFetchError) {
        let targetName = entry.target ?? ""
        guard case .success(let parts) = EntryPath.components(of: targetName, zip: format == .zip),
              parts.count > extract.stripComponents else {
            throw unsafe(entry, "is a hard link to '\(targetName)', which is not a file of the archive's tree")
        }
        let targetComponents = Array(parts.dropFirst(extract.stripComponents))
        guard let source = try existingDirectory(Array(targetComponents.dropLast())),
              source.regularFileStatus(targetComponents.last!) != nil else {
            throw unsafe(entry, "is a hard link to '\(targetName)', which is not a file of the archive's tree")
        }
        let directory = try parent(of: components, entry: entry)
        let name = components.last!
        if targetComponents.joined(separator: "/") == path { return }
        try replaceable(path, name: name, in: directory, entry: entry, as: .file)
        guard linkat(source.descriptor, targetComponents.last!, directory.descriptor, name, 0) == 0 else {
            throw FileSink.failure(errno, "cannot link \(root.path)/\(path)")
        }
        withExtendedLifetime(source) {}
    }

    // MARK: - Places

    /// The directory an entry at `components` goes into, made (and recorded) as needed.
    private mutating func parent(of components: [String], entry: ArchiveReader.Entry) throws(BatchFetchError) -> SafeDirectory {
        try directory(Array(components.dropLast()), entry: entry)
    }

    /// The directory at `components`, made as needed and opened one component at a time
    /// without following links. A component that is a file or a link fails the entry: writing
    /// through a link an earlier entry planted is how archives escape.
    private mutating func directory(_ components: [String], entry: ArchiveReader.Entry) throws(BatchFetchError) -> SafeDirectory {
        let path = components.joined(separator: "/")
        if let current, current.path == path { return current.directory }
        var opened = root
        var prefix = ""
        for component in components {
            prefix = prefix.isEmpty ? component : prefix + "/" + component
            if mkdirat(opened.descriptor, component, 0o755) != 0, errno != EEXIST {
                throw FileSink.failure(errno, "cannot create \(root.path)/\(prefix)")
            }
            let next = openat(opened.descriptor, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                guard errno == ELOOP || errno == ENOTDIR else { throw FileSink.failure(errno, "cannot open \(root.path)/\(prefix)") }
                let made = opened.status(component).flatMap(ExtractedTree.Entry.kind(of:)) == .symlink ? "symbolic link" : "file"
                throw unsafe(entry, "goes through '\(prefix)', which the archive made a \(made)")
            }
            opened = SafeDirectory(adopting: next, path: root.path + "/" + prefix)
        }
        current = (path, opened)
        return opened
    }

    /// The directory at `components` if it is there (never following a link), nil if not.
    private func existingDirectory(_ components: [String]) throws(BatchFetchError) -> SafeDirectory? {
        do throws(BatchFetchError) {
            return try root.subdirectory(components.joined(separator: "/"), create: false)
        } catch {
            guard error.code == .unsafePath else { throw error }
            return nil
        }
    }

    /// Makes room for a new `kind` at `path`: an earlier entry of the same kind is replaced (the
    /// later one wins, as with tar); one of another kind fails the archive.
    private func replaceable(_ path: String, name: String, in directory: SafeDirectory, entry: ArchiveReader.Entry,
                             as kind: ExtractedTree.Kind) throws(BatchFetchError) {
        guard let earlier = directory.status(name).flatMap(ExtractedTree.Entry.kind(of:)) else { return }
        guard earlier == kind else { throw duplicate(entry, was: earlier, now: kind) }
        guard unlinkat(directory.descriptor, name, 0) == 0 else { throw FileSink.failure(errno, "cannot replace \(root.path)/\(path)") }
    }

    // MARK: - Failures

    private func unsafe(_ entry: ArchiveReader.Entry, _ reason: String) -> BatchFetchError {
        BatchFetchError(.unsafeArchive, "\(archiveName): entry '\(entry.path)' \(reason)")
    }

    private func duplicate(_ entry: ArchiveReader.Entry, was: ExtractedTree.Kind, now: ExtractedTree.Kind) -> BatchFetchError {
        let names: [ExtractedTree.Kind: String] = [.file: "a file", .directory: "a directory", .symlink: "a symbolic link"]
        return unsafe(entry, "appears twice, as \(names[was]!) and as \(names[now]!)")
    }

    private func tooLarge() -> BatchFetchError {
        BatchFetchError(.archiveTooLarge, "\(archiveName) unpacks to more than \(sizeCap) bytes (max_size)")
    }

    /// `UTIME_OMIT` (linux/stat.h, which Glibc's module leaves out): the access time is left.
    private static let keepAccessTime = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)

    /// The process's umask, read without changing it (`umask(2)` can only set it, and setting it
    /// back races other threads' file creation): from `/proc/self/status`, else the usual 022.
    static let processUmask: mode_t = {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
           let value = mode_t(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) {
            return value
        }
        return 0o022
    }()
}
