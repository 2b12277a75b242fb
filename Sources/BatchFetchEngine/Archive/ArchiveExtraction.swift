import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// Makes a download job's `extract.into` the tree of its verified archive, atomically and
/// idempotently (Docs/Archives.md):
///
/// - a tree recorded in the state store for this archive (its sha256) and these settings, and
///   still whole (one `lstat` per entry), is kept as it is — no byte of the archive is read;
/// - otherwise the archive is unpacked into a fresh temporary sibling of `into`
///   (``TreeWriter``), which is swapped into place in one step (`renameat2` with
///   `RENAME_EXCHANGE`, so `into` is the old tree or the whole new one at every instant), and
///   the old tree is removed; a tree that had been changed reports how many entries differed;
/// - on any failure the sibling is removed and `into` is left as it was. Siblings a killed run
///   left behind are removed before the next unpacking beside them.
struct ArchiveExtraction {
    let extract: Extract
    let root: SafeDirectory
    let state: StateCache
    /// The archive's dest, for messages.
    let archiveName: String
    /// The job's progress, which shows the unpacking.
    var progress: JobProgress? = nil

    private var into: String { extract.into.resolved }

    /// The tree recorded at `into` when it came from the archive `archiveSHA256` (or, with none
    /// given, from the URL `urlSHA256`) under these settings and is still whole: what a rerun
    /// keeps without reading the archive.
    func intactTree(archiveSHA256: String?, urlSHA256: String?) -> ExtractedTree? {
        guard let tree = recordedTree(archiveSHA256: archiveSHA256, urlSHA256: urlSHA256) else { return nil }
        return tree.differences(in: root, into: into, state: state, stopEarly: true).count == 0 ? tree : nil
    }

    /// The tree recorded at `into` from the archive `archiveSHA256` (or, with none given, from
    /// the URL `urlSHA256`) under these settings, whole or not.
    private func recordedTree(archiveSHA256: String?, urlSHA256: String?) -> ExtractedTree? {
        guard let tree = state.tree(at: into), tree.settings == extract.settingsKey else { return nil }
        if let archiveSHA256 { return tree.archiveSHA256 == archiveSHA256 ? tree : nil }
        return urlSHA256 != nil && tree.urlSHA256 == urlSHA256 ? tree : nil
    }

    /// The report's `extracted` for `tree`.
    func report(_ tree: ExtractedTree, repaired: Int? = nil) -> Extraction {
        Extraction(into: extract.into.redacted, format: tree.format, files: tree.files, bytes: tree.bytes, repaired: repaired)
    }

    /// `into` as the tree of the archive open at `archive` (`size` bytes, sha256
    /// `archiveSHA256`, verified by the caller): kept when it already is, else unpacked and
    /// swapped in. `repaired` in the result counts the entries of an earlier tree of this
    /// archive that someone changed or removed.
    func ensure(archive: Int32, size: Int64, archiveSHA256: String, urlSHA256: String?) throws(BatchFetchError) -> Extraction {
        var repaired: Int?
        if let recorded = recordedTree(archiveSHA256: archiveSHA256, urlSHA256: nil) {
            let differing = recorded.differences(in: root, into: into, state: state, naming: 0).count
            if differing == 0 { return report(recorded) }
            repaired = differing
        }
        let tree = try unpack(archive: archive, size: size, archiveSHA256: archiveSHA256, urlSHA256: urlSHA256)
        return report(tree, repaired: repaired)
    }

    /// A tree (or single file) unpacked beside `into`, not yet in place.
    struct Unpacked: Sendable {
        let parent: SafeDirectory
        let temporary: String
        let name: String
        let format: Extract.Format
        /// A tree's entries, recorded in the state store as they were written (a single file is
        /// recorded once in place: the rename changes its ctime).
        var recording: StateCache.TreeRecording?
    }

    /// Unpacks the archive beside `into` and swaps it into place; records the new tree.
    private func unpack(archive: Int32, size: Int64, archiveSHA256: String, urlSHA256: String?) throws(BatchFetchError) -> ExtractedTree {
        let unpacked = try unpackBeside(archiveSize: size) { () throws(BatchFetchError) in
            try ArchiveReader(descriptor: archive, format: extract.format, name: archiveName)
        }
        return try install(unpacked, archiveSHA256: archiveSHA256, urlSHA256: urlSHA256)
    }

    /// Unpacks an archive as its bytes arrive through `stream` (``StreamingExtraction``), beside
    /// `into`; tar-based formats and single compressed files only (a zip is read from its end,
    /// which a stream does not have yet: the caller unpacks it after verification).
    func unpackStreaming(_ stream: ArchiveStream, archiveSize: Int64?) throws(BatchFetchError) -> Unpacked {
        try unpackBeside(archiveSize: archiveSize ?? 0, streaming: true) { () throws(BatchFetchError) in
            try ArchiveReader(source: stream, format: extract.format, name: archiveName)
        }
    }

    /// Unpacks what `open` reads into a fresh temporary sibling of `into` (removing what a
    /// killed run left beside it first); on failure the sibling is removed.
    private func unpackBeside(archiveSize: Int64, streaming: Bool = false,
                              _ open: () throws(BatchFetchError) -> ArchiveReader) throws(BatchFetchError) -> Unpacked {
        let slash = into.lastIndex(of: "/")
        let parentPath = slash.map { String(into[..<$0]) } ?? ""
        let name = slash.map { String(into[into.index(after: $0)...]) } ?? into
        guard let parent = try root.subdirectory(parentPath, create: true) else {
            throw BatchFetchError(.ioError, "cannot open \(root.path)/\(parentPath)")
        }
        for leftover in parent.names() where leftover.hasPrefix("." + name + ".") && SafeDirectory.isLeftoverTemporary(leftover) {
            try? parent.removeTree(leftover)
        }
        let temporary = SafeDirectory.temporaryName(for: name)
        do throws(BatchFetchError) {
            let reader = try open()
            let first = try reader.next()
            guard let format = reader.found else { throw BatchFetchError(.archiveInvalid, "\(archiveName) cannot be read") }
            if streaming, format == .zip { throw BatchFetchError(.archiveInvalid, "a zip is not unpacked while it downloads") }
            guard !format.isSingleFile else {
                try decompress(reader, into: parent, temporary: temporary, archiveSize: archiveSize)
                return Unpacked(parent: parent, temporary: temporary, name: name, format: format)
            }
            let recording = try writeTree(reader, first: first, format: format, into: parent, temporary: temporary,
                                          archiveSize: archiveSize)
            return Unpacked(parent: parent, temporary: temporary, name: name, format: format, recording: recording)
        } catch {
            try? parent.removeTree(temporary)
            throw error
        }
    }

    /// Swaps an unpacked tree into place (the old one removed) and records it.
    func install(_ unpacked: Unpacked, archiveSHA256: String, urlSHA256: String?) throws(BatchFetchError) -> ExtractedTree {
        let parent = unpacked.parent
        do throws(BatchFetchError) {
            if try parent.exchange(unpacked.temporary, with: unpacked.name) { try? parent.removeTree(unpacked.temporary) }
        } catch {
            discard(unpacked)
            throw error
        }
        var recording = unpacked.recording ?? StateCache.TreeRecording(format: unpacked.format, settings: extract.settingsKey, in: state)
        // A rename changes the ctime of what it moves: a single file is taken in place.
        if unpacked.format.isSingleFile, let status = parent.regularFileStatus(unpacked.name) {
            recording.add(ExtractedTree.Entry(path: "", kind: .file, status: status))
        }
        return recording.install(at: into, archiveSHA256: archiveSHA256, urlSHA256: urlSHA256)
    }

    /// Removes an unpacked tree that is not to be installed, and what was recorded of it.
    func discard(_ unpacked: Unpacked) {
        try? unpacked.parent.removeTree(unpacked.temporary)
        unpacked.recording?.discard()
    }

    /// Writes every entry into a fresh directory `temporary` in `parent`, and records what it
    /// holds — walked once the last entry is written and before the directories get their
    /// modes (one may be unreadable then), so that a hard link's ctime is its last one.
    private func writeTree(_ reader: ArchiveReader, first: ArchiveReader.Entry?, format: Extract.Format, into parent: SafeDirectory,
                           temporary: String, archiveSize: Int64) throws(BatchFetchError) -> StateCache.TreeRecording {
        guard mkdirat(parent.descriptor, temporary, 0o700) == 0 else {
            throw FileSink.failure(errno, "cannot create \(parent.path)/\(temporary)")
        }
        guard let tree = try parent.subdirectory(temporary, create: false) else {
            throw BatchFetchError(.ioError, "\(parent.path)/\(temporary) vanished")
        }
        var writer = TreeWriter(root: tree, extract: extract, format: format, archiveSize: archiveSize, archiveName: archiveName,
                                progress: progress)
        var next = first
        while let entry = next {
            try writer.write(entry, from: reader)
            next = try reader.next()
        }
        var recording = StateCache.TreeRecording(format: format, settings: extract.settingsKey, in: state)
        ExtractedTree.walk(tree) { recording.add($0) }
        recording.flush()
        writer.finish()
        _ = fchmod(tree.descriptor, 0o777 & ~TreeWriter.processUmask)
        return recording
    }

    /// A single compressed file: its one stream, decompressed into the file `temporary`.
    private func decompress(_ reader: ArchiveReader, into parent: SafeDirectory, temporary: String,
                            archiveSize: Int64) throws(BatchFetchError) {
        let output = try parent.openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o666)
        defer { close(output) }
        let cap = extract.sizeCap(archiveSize: archiveSize)
        let shown = "\(parent.path)/\(temporary)"
        var total: Int64 = 0
        try reader.readData { (bytes: UnsafeRawBufferPointer, offset: Int64) throws(BatchFetchError) in
            total += Int64(bytes.count)
            progress?.unpacked(entries: 1, bytes: total)
            if total > cap { throw BatchFetchError(.archiveTooLarge, "\(archiveName) decompresses to more than \(cap) bytes (max_size)") }
            guard FileSink.pwriteFully(output, bytes, at: offset) else { throw FileSink.failure(errno, "cannot write \(shown)") }
        }
    }
}
