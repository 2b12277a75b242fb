import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import CArchive
import Foundation

/// One archive read with libarchive, entry by entry, from an open file. The format is found
/// from the bytes (libarchive's bidding) among tar (ustar, pax, GNU), zip and a single
/// compressed file, never from the name; a named `format` allows only that one. Every other
/// format libarchive knows (cpio, 7z, rar, iso…) is left out on purpose: each is one more parser
/// facing hostile bytes, and no dataset this tool is for ships in them (Docs/Archives.md).
///
/// Why libarchive and not parsers of our own: tar alone has three header dialects, sparse
/// files, long names in two extensions and base-256 sizes; zip has zip64, data descriptors and
/// several compressions. libarchive is what bsdtar is made of, fuzzed for years.
final class ArchiveReader {
    /// What an entry is; the kinds batchfetch refuses are kept apart so that the message names
    /// them.
    enum Kind: Equatable {
        case file, directory, symlink, hardlink
        case device, fifo, socket, unknown
    }

    /// One entry's header.
    struct Entry {
        var path: String
        var kind: Kind
        /// Permission bits as stored (setuid, setgid and sticky included: the writer drops them).
        var mode: mode_t
        var size: Int64
        var mtime: timespec?
        /// The link's target: a symlink's text, or a hard link's path in the archive.
        var target: String?
    }

    private let archive: OpaquePointer
    /// For messages.
    let name: String
    let requested: Extract.Format

    /// A reader with every format enabled, not yet opened; `stream` is kept alive with it. A
    /// failure of the opening inits frees the archive in deinit (every property is set).
    private init(format: Extract.Format, name: String, stream: ArchiveStream?) throws(BatchFetchError) {
        _ = Self.unicodeNames
        guard let archive = archive_read_new() else { throw BatchFetchError(.ioError, "libarchive: out of memory") }
        self.archive = archive
        self.name = name
        requested = format
        self.stream = stream
        Self.enableFormats(on: archive)
    }

    /// Opens the archive in `descriptor` (read from its start; libarchive seeks in zips).
    convenience init(descriptor: Int32, format: Extract.Format, name: String) throws(BatchFetchError) {
        try self.init(format: format, name: name, stream: nil)
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw FileSink.failure(errno, "cannot read \(name)") }
        guard archive_read_open_fd(archive, descriptor, 1 << 20) == ARCHIVE_OK else { throw invalid("cannot be read") }
    }

    /// Opens an archive read from `source` as its bytes come (streaming extraction): libarchive
    /// asks it for blocks in order and never seeks.
    convenience init(source: ArchiveStream, format: Extract.Format, name: String) throws(BatchFetchError) {
        try self.init(format: format, name: name, stream: source)
        let read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeRawPointer?>?) -> la_ssize_t = {
            _, context, buffer in
            let source = Unmanaged<ArchiveStream>.fromOpaque(context!).takeUnretainedValue()
            guard let block = source.next() else { return -1 }
            buffer?.pointee = block.baseAddress
            return la_ssize_t(block.count)
        }
        guard archive_read_open(archive, Unmanaged.passUnretained(source).toOpaque(), nil, read, nil) == ARCHIVE_OK else {
            throw invalid("cannot be read")
        }
    }

    /// The source of a streamed archive, kept alive while libarchive reads it.
    private let stream: ArchiveStream?

    deinit {
        archive_read_free(archive)
    }

    /// libarchive converts names through the C library's character set, which is ASCII until a
    /// program sets a locale: a zip's UTF-8 name (or a pax one) had no spelling at all. A UTF-8
    /// `LC_CTYPE`, set once, lets every name through as the archive spells it; batchfetch
    /// formats nothing by locale, so nothing else changes.
    private static let unicodeNames: Void = {
        if setlocale(LC_CTYPE, "C.UTF-8") == nil { _ = setlocale(LC_CTYPE, "en_US.UTF-8") }
    }()

    /// Every filter and format batchfetch unpacks, whatever `format` names: what the bytes are
    /// is found first and then held to the name (``foundFormat()``), so that the message can say
    /// what the archive is.
    private static func enableFormats(on archive: OpaquePointer) {
        for filter in [archive_read_support_filter_gzip, archive_read_support_filter_bzip2, archive_read_support_filter_xz,
                       archive_read_support_filter_zstd] { _ = filter(archive) }
        _ = archive_read_support_format_tar(archive)
        _ = archive_read_support_format_gnutar(archive)
        _ = archive_read_support_format_zip(archive)
        _ = archive_read_support_format_raw(archive)
    }

    /// The next entry's header, or nil at the end of the archive.
    func next() throws(BatchFetchError) -> Entry? {
        var entry: OpaquePointer?
        let status = archive_read_next_header(archive, &entry)
        if status == ARCHIVE_EOF {
            if found == nil { found = try foundFormat() }  // an archive of no entries
            return nil
        }
        guard status >= ARCHIVE_WARN, let entry else { throw invalid("cannot be read") }
        if found == nil {
            found = try foundFormat()
        }
        guard let path = archive_entry_pathname_utf8(entry).map({ String(cString: $0) })
            ?? archive_entry_pathname(entry).map({ String(cString: $0) }) else {
            throw BatchFetchError(.archiveInvalid, "\(name): an entry's name cannot be read in any character set")
        }
        let hardlink = archive_entry_hardlink_utf8(entry).map { String(cString: $0) }
            ?? archive_entry_hardlink(entry).map { String(cString: $0) }
        let kind: Kind
        if hardlink != nil {
            kind = .hardlink
        } else {
            // libarchive's AE_IF* values (archive_entry.h), the POSIX ones on every platform.
            switch archive_entry_filetype(entry) & 0o170000 {
            case 0o100000: kind = .file
            case 0o040000: kind = .directory
            case 0o120000: kind = .symlink
            case 0o020000, 0o060000: kind = .device
            case 0o010000: kind = .fifo
            case 0o140000: kind = .socket
            default: kind = .unknown
            }
        }
        let symlink = kind == .symlink
            ? (archive_entry_symlink_utf8(entry).map { String(cString: $0) } ?? archive_entry_symlink(entry).map { String(cString: $0) })
            : nil
        let mtime = archive_entry_mtime_is_set(entry) != 0
            ? timespec(tv_sec: time_t(archive_entry_mtime(entry)), tv_nsec: Int(archive_entry_mtime_nsec(entry))) : nil
        return Entry(path: path, kind: kind, mode: mode_t(archive_entry_perm(entry)),
                     size: archive_entry_size_is_set(entry) != 0 ? Int64(archive_entry_size(entry)) : 0,
                     mtime: mtime, target: hardlink ?? symlink)
    }

    /// Hands the current entry's data to `write` block by block, each with its offset in the
    /// file (a sparse tar entry leaves holes between blocks).
    func readData(_ write: (UnsafeRawBufferPointer, Int64) throws(BatchFetchError) -> Void) throws(BatchFetchError) {
        while true {
            var buffer: UnsafeRawPointer?
            var size = 0
            var offset: la_int64_t = 0
            let status = archive_read_data_block(archive, &buffer, &size, &offset)
            if status == ARCHIVE_EOF { return }
            guard status >= ARCHIVE_WARN else { throw invalid("is corrupt or truncated") }
            if size > 0, let buffer { try write(UnsafeRawBufferPointer(start: buffer, count: size), Int64(offset)) }
        }
    }

    /// The format found, in the manifest's names (`tar.gz`, `zip`, `gz`…), once the first header
    /// was read.
    private(set) var found: Extract.Format?

    /// The format libarchive settled on, held to the one requested; a raw stream with no
    /// compression is no archive at all.
    private func foundFormat() throws(BatchFetchError) -> Extract.Format {
        let base = archive_format(archive) & ARCHIVE_FORMAT_BASE_MASK
        var filters: [Int32] = []
        for index in 0..<max(0, archive_filter_count(archive)) {
            let code = archive_filter_code(archive, index)
            if code != ARCHIVE_FILTER_NONE { filters.append(code) }
        }
        guard filters.count <= 1 else { throw invalid("is compressed more than once, which batchfetch does not unpack") }
        let compression = filters.first
        let format: Extract.Format?
        switch (base, compression) {
        case (ARCHIVE_FORMAT_TAR, nil): format = .tar
        case (ARCHIVE_FORMAT_TAR, ARCHIVE_FILTER_GZIP): format = .tarGz
        case (ARCHIVE_FORMAT_TAR, ARCHIVE_FILTER_BZIP2): format = .tarBz2
        case (ARCHIVE_FORMAT_TAR, ARCHIVE_FILTER_XZ): format = .tarXz
        case (ARCHIVE_FORMAT_TAR, ARCHIVE_FILTER_ZSTD): format = .tarZst
        case (ARCHIVE_FORMAT_ZIP, nil): format = .zip
        case (ARCHIVE_FORMAT_RAW, ARCHIVE_FILTER_GZIP): format = .gz
        case (ARCHIVE_FORMAT_RAW, ARCHIVE_FILTER_BZIP2): format = .bz2
        case (ARCHIVE_FORMAT_RAW, ARCHIVE_FILTER_XZ): format = .xz
        case (ARCHIVE_FORMAT_RAW, ARCHIVE_FILTER_ZSTD): format = .zst
        default: format = nil
        }
        guard let format else {
            let what = base == ARCHIVE_FORMAT_RAW ? "is neither an archive nor a compressed file"
                : "is a \(String(cString: archive_format_name(archive))) archive, which batchfetch does not unpack"
            throw BatchFetchError(.archiveInvalid, "\(name) \(what)")
        }
        if requested != .auto, requested != format {
            throw BatchFetchError(.archiveInvalid, "\(name) is \(format.rawValue), not the \(requested.rawValue) its 'format' names")
        }
        return format
    }

    private func invalid(_ what: String) -> BatchFetchError {
        let detail = archive_error_string(archive).map { ": " + String(cString: $0) } ?? ""
        let expected = requested == .auto ? "" : " (\(requested.rawValue))"
        return BatchFetchError(.archiveInvalid, "\(name)\(expected) \(what)\(detail)")
    }
}
