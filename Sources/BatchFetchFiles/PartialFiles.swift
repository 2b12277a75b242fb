import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// When published files reach stable storage (Docs/Contracts.md §3).
public enum Durability: String, Sendable, CaseIterable {
    /// Rename as files complete; one `syncfs` before the report is written (default).
    case batch
    /// fsync each file before its rename, and its directory after.
    case strict
    /// No syncs.
    case none
}

/// The files of one destination: `dest`, its partial and the partial's sidecar, all in the
/// destination's directory so the final rename never crosses file systems.
///
/// Every operation goes through the directory's descriptor (``SafeDirectory``), opened once per
/// job beneath the output directory without following symlinks, and every file is opened with
/// `O_NOFOLLOW`: a symlink planted at any of these names, or swapped in for a directory while
/// the run goes on, is refused (`unsafe_path`), never written through.
///
/// The part is held under an exclusive `flock` while the job writes it (``openPart()``): a
/// second process on an overlapping output directory (nested, or reached through a symlink)
/// cannot write into it, and its job fails with `in_use` instead of mixing blocks.
///
/// A part that no later run would resume (``openPart(unnamed:)``: a small single stream, which
/// gets no sidecar) can instead be a file without a name in the same directory, linked into
/// place when verified: no second process can reach it, and a kill leaves nothing behind. A
/// body of unknown size starts unnamed too, and is given its name when it turns out to be one
/// a later run could resume (``writeSidecar(_:)``).
///
package final class PartialFiles: Sendable {
    package let root: SafeDirectory
    /// The dest relative to the output directory.
    package let dest: String
    /// Paths for messages (made when asked: a job that succeeds needs none of them).
    package var destPath: String { root.path + "/" + dest }
    package var partPath: String { partPath(unnamed: partIsUnnamed) }
    /// The open part is a file without a name (``openPart(unnamed:)``), new and empty when opened.
    package var partIsUnnamed: Bool { openedPart.unnamed }
    package var sidecarPath: String { directoryPath + "/" + sidecarName }
    package let destName: String
    package let partName: String
    package var sidecarName: String { DestPath.sidecarName(for: destName) }
    private let directoryRelative: String
    private var directoryPath: String { root.path + (directoryRelative.isEmpty ? "" : "/" + directoryRelative) }
    private let listings: DirectoryListings?

    /// What the job holds of its files, changed as it opens, names and releases them.
    private struct Held {
        var directory: SafeDirectory?
        /// The part, open and locked, while the job owns it.
        var part: Int32 = -1
        /// The open part is a file without a name (``SafeDirectory/openUnnamed()``), not `partName`.
        var unnamed = false
        /// False once ``local()`` found no sidecar while the part was locked, until one is
        /// written: no other process makes one without the lock, so publishing need not unlink
        /// it (an `unlinkat` takes the directory's lock even for a missing name, in contention
        /// with the other jobs' creates; bench/results/profile.md, "Choices the code cites").
        var sidecarMayExist = true
    }

    private let held = NIOLockedValueBox(Held())

    /// `listings`: the run's (``DirectoryListings``), which spare the lookups of names that were
    /// not there when the run began; nil to look every name up.
    package init(root: SafeDirectory, dest: String, listings: DirectoryListings? = nil) {
        self.root = root
        self.dest = dest
        self.listings = listings
        let slash = dest.lastIndex(of: "/")
        directoryRelative = slash.map { String(dest[..<$0]) } ?? ""
        destName = slash.map { String(dest[dest.index(after: $0)...]) } ?? dest
        partName = DestPath.partName(for: destName)
    }

    deinit {
        held.withLockedValue { if $0.part >= 0 { close($0.part) } }
    }

    /// The destination's directory: opened once, created first when `create`; nil when it does
    /// not exist (and is not to be created).
    @discardableResult
    package func openDirectory(create: Bool) throws(BatchFetchError) -> SafeDirectory? {
        if let directory = held.withLockedValue({ $0.directory }) { return directory }
        guard let opened = try root.subdirectory(directoryRelative, create: create) else { return nil }
        held.withLockedValue { $0.directory = opened }
        return opened
    }

    /// The directory when it exists and is safe to use; nil otherwise (nothing to find there).
    private var existing: SafeDirectory? {
        (try? openDirectory(create: false)) ?? nil
    }

    /// The partial on disk, if any; an unreadable sidecar, or one written for another file than
    /// the one that has the part's name now (``Sidecar/partInode``), counts as none (the bytes
    /// then cannot be trusted and are replaced).
    package func local() -> LocalPartial? {
        guard !openedPart.unnamed, let directory = existing, let status = directory.regularFileStatus(partName) else { return nil }
        let (data, missing) = directory.read(sidecarName, limit: 16 << 20)
        if missing { held.withLockedValue { if $0.part >= 0 { $0.sidecarMayExist = false } } }
        let sidecar = data.flatMap { try? JSONDecoder().decode(Sidecar.self, from: $0) }
            .flatMap { $0.partInode == nil || $0.partInode == UInt64(status.st_ino) ? $0 : nil }
        return LocalPartial(fileSize: Int64(status.st_size), sidecar: sidecar)
    }

    /// Opens the part for writing, creating it, and takes its lock (once per job); returns a
    /// descriptor of its own for the caller to close (a sink, a hasher). All of them share the
    /// one open file description, so the lock covers every writer of this job.
    ///
    /// With `unnamed` (a part no later run would resume) the part is a new file without a name
    /// where the system allows it, unless a `<dest>.part` is on disk: that one is taken, as
    /// always, so an earlier run's leftover is used up rather than left behind.
    package func openPart(unnamed wanted: Bool = false) throws(BatchFetchError) -> Int32 {
        let directory = try openDirectory(create: true)!
        let opened = held.withLockedValue { held -> Result<Int32, BatchFetchError> in
            do throws(BatchFetchError) {
                return .success(try openPart(unnamed: wanted, in: directory, held: &held))
            } catch {
                return .failure(error)
            }
        }
        return try opened.get()
    }

    /// ``openPart(unnamed:)`` inside the lock of what the job holds.
    private func openPart(unnamed wanted: Bool, in directory: SafeDirectory, held: inout Held) throws(BatchFetchError) -> Int32 {
        if held.part < 0, wanted, !mayExist(partName, in: directory) || directory.status(partName) == nil,
           let descriptor = directory.openUnnamed() {
            held.part = descriptor
            held.unnamed = true
        }
        if held.part < 0 {
            // Another process may rename or replace the part between our open and our lock:
            // only a lock on the file that still has the name counts.
            for _ in 0..<8 {
                let descriptor = try directory.openFile(partName, O_RDWR | O_CREAT)
                if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                    close(descriptor)
                    throw BatchFetchError(.inUse, "another process is writing \(partPath(unnamed: false)) (a second batchfetch run on an overlapping output directory?)")
                }
                var opened = stat()
                if fstat(descriptor, &opened) == 0, nameLeads(to: opened, in: directory) {
                    held.part = descriptor
                    break
                }
                close(descriptor)
            }
            guard held.part >= 0 else { throw BatchFetchError(.inUse, "\(partPath(unnamed: false)) keeps being replaced by another process") }
        }
        let copy = dup(held.part)
        guard copy >= 0 else { throw FileSink.failure(errno, "cannot open \(partPath(unnamed: held.unnamed))") }
        return copy
    }

    /// The part's path, for messages (called inside `held`'s lock or not).
    private func partPath(unnamed: Bool) -> String {
        unnamed ? "the unnamed part of \(destPath)" : directoryPath + "/" + partName
    }

    /// The part's descriptor (-1 when not open) and whether it is unnamed.
    private var openedPart: (descriptor: Int32, unnamed: Bool) {
        held.withLockedValue { ($0.part, $0.unnamed) }
    }

    /// Releases the part's lock (it stays on disk, e.g. for a resume).
    private func closePart() {
        held.withLockedValue { held in
            if held.part >= 0 { close(held.part) }
            held = Held(directory: held.directory)
        }
    }

    /// Replaces the sidecar atomically (temporary file and rename, no fsync): a kill at any
    /// instant leaves the old or the new sidecar, never a torn one. An unnamed part is given its
    /// name first (``nameUnnamedPart()``), since a later run finds a part to resume by its name;
    /// one that cannot be named gets no sidecar: nothing could find it again.
    package func writeSidecar(_ sidecar: Sidecar) throws(BatchFetchError) {
        guard nameUnnamedPart() else { return }
        var sidecar = sidecar
        sidecar.partInode = heldPartStatus().map { UInt64($0.st_ino) }
        guard let data = try? StableJSON.encode(sidecar) else {
            throw BatchFetchError(.ioError, "cannot encode the sidecar of \(destPath)")
        }
        held.withLockedValue { $0.sidecarMayExist = true }
        try openDirectory(create: true)!.writeAtomically(sidecarName, data)
    }

    /// Gives an unnamed part the name `<dest>.part`, under the lock a part opened by name holds,
    /// so that a later run can resume it. Why: a body of unknown size starts unnamed (in a batch
    /// without sizes most are small files, and an unnamed part costs one change to the directory
    /// instead of two) and is named once its head shows a body worth resuming. Never replaces:
    /// a `<dest>.part` that appeared since the job began is another process's (this run's jobs
    /// have names of their own), and the part then stays unnamed. True when the part is named,
    /// now or from the start.
    @discardableResult
    package func nameUnnamedPart() -> Bool {
        held.withLockedValue { held in
            guard held.unnamed else { return true }
            guard let directory = held.directory, flock(held.part, LOCK_EX | LOCK_NB) == 0,
                  (try? directory.link(held.part, as: partName, replacing: false)) != nil else { return false }
            held.unnamed = false
            return true
        }
    }

    /// Removes the part and its sidecar (an unnamed part goes when it is closed; a named one on
    /// disk then is another's). A named part open in this job loses its name only if the name
    /// still leads to it: a file another process renamed over `<dest>.part` mid-run is left
    /// alone, as ``publish(durability:)`` leaves it.
    package func removePartial() {
        if !openedPart.unnamed, let directory = existing {
            if heldPartStatus().map({ nameLeads(to: $0, in: directory) }) ?? true { directory.unlink(partName) }
            directory.unlink(sidecarName)
        }
        closePart()
    }

    /// `fstat` of the part this job holds open: the file it writes, verifies and publishes,
    /// whatever has the part's name by now. Nil when none is open.
    private func heldPartStatus() -> stat? {
        let descriptor = openedPart.descriptor
        var info = stat()
        return descriptor >= 0 && fstat(descriptor, &info) == 0 ? info : nil
    }

    /// Whether `<dest>.part` in `directory` is the file `own` describes.
    private func nameLeads(to own: stat, in directory: SafeDirectory) -> Bool {
        directory.status(partName).map { $0.st_ino == own.st_ino && $0.st_dev == own.st_dev } ?? false
    }

    /// Puts the verified part in place, replacing any old `dest` (or a symlink planted there,
    /// never followed) atomically, and drops the sidecar. The file published is the one the job
    /// wrote and verified, reached through its open descriptor, never whatever has the part's
    /// name by then: another process may have renamed a file of its own over `<dest>.part`
    /// mid-run, and renaming the name would have published that file in place of the verified
    /// bytes. So an unnamed part, and where the system allows it a named one, is linked into
    /// place from its descriptor (the name of a named part is removed after, if it is still the
    /// job's file); elsewhere a named part is renamed only if the name still leads to the job's
    /// file. A named part that lost its name cannot be linked again: the job fails `in_use`, and
    /// the other process's file is left alone. With `strict` the directory is fsynced after (the
    /// file already was).
    ///
    /// Returns the published file's status for the state cache: `fstat` of the part while it is
    /// open — the file just published, whatever another process put at `dest` since, and no
    /// lookup of the name — else `lstat` of `dest`.
    @discardableResult
    package func publish(durability: Durability) throws(BatchFetchError) -> stat? {
        let directory = try openDirectory(create: true)!
        let opened = openedPart
        if opened.unnamed {
            try directory.link(opened.descriptor, as: destName)
        } else {
            try publishNamedPart(opened.descriptor, in: directory)
            if held.withLockedValue({ $0.sidecarMayExist }) { directory.unlink(sidecarName) }
        }
        var published = stat()
        let status = opened.descriptor >= 0
            ? (fstat(opened.descriptor, &published) == 0 ? published : nil) : directory.regularFileStatus(destName)
        closePart()
        if durability == .strict { directory.sync() }
        return status
    }

    /// Publishes the named part open at `descriptor` (-1: not open, which only a caller outside
    /// the engine leaves it): see ``publish(durability:)``.
    private func publishNamedPart(_ descriptor: Int32, in directory: SafeDirectory) throws(BatchFetchError) {
        guard descriptor >= 0, let own = heldPartStatus() else {
            try directory.rename(partName, to: destName)
            return
        }
        // Its name gone (renamed over, removed), the file cannot be linked again, and no name
        // leads to it.
        guard own.st_nlink > 0 else {
            throw BatchFetchError(.inUse, "\(partPath(unnamed: false)) was replaced or removed by another process while this job wrote it")
        }
        if directory.linksOpenFiles {
            try directory.link(descriptor, as: destName)
            if nameLeads(to: own, in: directory) { directory.unlink(partName) }
        } else {
            guard nameLeads(to: own, in: directory) else {
                throw BatchFetchError(.inUse, "\(partPath(unnamed: false)) was replaced by another process while this job wrote it")
            }
            try directory.rename(partName, to: destName)
        }
    }

    /// Publishes the file `name` in `source` (outside the job: a cache entry) as `dest` by a
    /// hard link: linked under a temporary name beside `dest`, checked to be the file `inode`
    /// (the name could have been replaced since the caller checked the file), and renamed over
    /// `dest`. Nil when no link can be made there (another file system, links refused): the
    /// caller copies instead. Returns `dest`'s status as published.
    package func publishLink(of name: String, in source: SafeDirectory, expecting inode: UInt64,
                            durability: Durability) throws(BatchFetchError) -> stat? {
        let directory = try openDirectory(create: true)!
        let temporary = SafeDirectory.temporaryName(for: destName)
        guard linkat(source.descriptor, name, directory.descriptor, temporary, 0) == 0 else { return nil }
        guard let status = directory.status(temporary), UInt64(status.st_ino) == inode else {
            directory.unlink(temporary)
            return nil
        }
        do {
            try directory.rename(temporary, to: destName)
        } catch {
            directory.unlink(temporary)
            throw error
        }
        if durability == .strict { directory.sync() }
        return directory.regularFileStatus(destName)
    }

    /// `dest` opened for reading, never through a symlink; the caller closes it.
    package func openDest() throws(BatchFetchError) -> Int32 {
        guard let directory = existing else { throw BatchFetchError(.ioError, "cannot open \(destPath)") }
        return try directory.openFile(destName, O_RDONLY)
    }

    /// Removes the file at `dest` (`extract.keep_archive: false`, once the tree is in place).
    package func removeDest() {
        existing?.unlink(destName)
    }

    /// `lstat` of `dest` as the job starts: a regular file, or nil (missing, a symlink, anything
    /// else). No lookup when the run's listing of the directory did not have it.
    package func destStatus() -> stat? {
        guard let directory = existing, mayExist(destName, in: directory) else { return nil }
        return directory.regularFileStatus(destName)
    }

    /// Whether `name` may be in `directory`: not when the run's listing of it (taken before any
    /// job made a name there) did not have it.
    private func mayExist(_ name: String, in directory: SafeDirectory) -> Bool {
        listings?.mayContain(name, in: directoryRelative, directory: directory) ?? true
    }

    /// Removes `<dest>.part` and its sidecar when that part is another name of `dest`'s own file:
    /// a run killed between linking a named part into place and removing its name
    /// (``publish(durability:)``) left them. Called for a `dest` found up to date; no lookup
    /// when the run's listing did not have the part's name.
    package func removePartLinkedToDest() {
        guard let directory = existing, mayExist(partName, in: directory),
              let dest = directory.regularFileStatus(destName), nameLeads(to: dest, in: directory) else { return }
        directory.unlink(partName)
        directory.unlink(sidecarName)
    }

    /// Whether `dest` and `<dest>.part` on disk, before the job opens its part, are each
    /// missing or at most `limit` bytes: what a job may have to hash (an existing `dest`) or read
    /// back (a part it resumes). No lookup of a name the run's listing did not have.
    package func holdsAtMost(_ limit: Int64) -> Bool {
        guard let directory = existing else { return true }
        for name in [destName, partName] where mayExist(name, in: directory) {
            if let status = directory.status(name), Int64(status.st_size) > limit { return false }
        }
        return true
    }

    /// Size of the part: of the file the job holds open, named or not (as ``partDigests(also:)``
    /// reads it), else of a regular file with the part's name.
    package func partSize() -> Int64? {
        if let held = heldPartStatus() { return Int64(held.st_size) }
        return openedPart.unnamed ? nil : existing?.regularFileSize(partName)
    }

    /// Digests of the whole part, named or not: read through its descriptor while the job holds
    /// it open (the file that is published), else by name.
    package func partDigests(also algorithms: DigestAlgorithms) throws(BatchFetchError) -> (digests: [String: String], bytes: Int64) {
        let opened = openedPart
        guard opened.descriptor >= 0 else { return try digests(of: partName, also: algorithms) }
        do {
            return try Digester.digests(ofDescriptor: opened.descriptor, also: algorithms)
        } catch {
            throw BatchFetchError(.ioError, "cannot read back \(partPath): \(error)")
        }
    }

    /// The part's first `count` bytes (fewer when it is shorter; none when it cannot be read).
    package func partPrefix(_ count: Int) -> Data {
        let opened = openedPart
        var descriptor = opened.descriptor
        var owned = false
        if descriptor < 0 {
            guard let directory = existing, let named = try? directory.openFile(partName, O_RDONLY) else { return Data() }
            (descriptor, owned) = (named, true)
        }
        defer { if owned { close(descriptor) } }
        var data = Data(count: count)
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, 0) }
        return read > 0 ? data.prefix(read) : Data()
    }

    /// Digests of the regular file `name` in the destination's directory.
    package func digests(of name: String, also algorithms: DigestAlgorithms) throws(BatchFetchError) -> (digests: [String: String], bytes: Int64) {
        guard let directory = existing else { throw BatchFetchError(.ioError, "cannot read \(directoryPath)/\(name)") }
        let descriptor = try directory.openFile(name, O_RDONLY)
        defer { close(descriptor) }
        do {
            return try Digester.digests(ofDescriptor: descriptor, also: algorithms)
        } catch {
            throw BatchFetchError(.ioError, "cannot read \(directoryPath)/\(name): \(error)")
        }
    }

    /// Makes the part a copy of `source`'s published dest: a hard link (the file is never
    /// written through it), or a copy (``FileCopy``) across file systems or where links are
    /// refused. Either way the part is then open, as a download's is, so that it is verified and
    /// published through its descriptor.
    package func takePart(from source: PartialFiles) throws(BatchFetchError) {
        guard let sourceDirectory = try source.openDirectory(create: false) else {
            throw BatchFetchError(.ioError, "\(source.destPath) is gone")
        }
        try takePart(from: sourceDirectory, name: source.destName, link: true)
    }

    /// Makes the part a copy of the regular file `name` in `directory` (never through a
    /// symlink): a hard link when `link` and the file system allows one, else a ``FileCopy``.
    @discardableResult
    package func takePart(from directory: SafeDirectory, name: String, link: Bool) throws(BatchFetchError) -> FileCopy.Method? {
        let destination = try openDirectory(create: true)!
        destination.unlink(partName)
        if link, linkat(directory.descriptor, name, destination.descriptor, partName, 0) == 0 {
            close(try openPart())
            return nil
        }
        let input = try directory.openFile(name, O_RDONLY)
        defer { close(input) }
        let output = try openPart()
        defer { close(output) }
        return try FileCopy.copy(from: input, to: output, names: ("\(directory.path)/\(name)", partPath)).method
    }
}
