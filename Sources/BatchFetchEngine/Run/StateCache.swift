import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// What batchfetch knows about the files it published, kept in `<output_dir>/.batchfetch-state.json`
/// between runs: for each dest its identity on disk (device, inode, size, mtime), its verified
/// digests, and the validators it was served with. A nightly rerun of a large manifest then
/// checks unchanged files with one `stat` each instead of hashing them, and `refresh: if-changed`
/// has an ETag or Last-Modified for its conditional request.
///
/// An entry counts only while the file's identity is unchanged; any write, replacement or touch
/// makes it stale and the file is hashed again. The cache is a hint: losing it costs a re-hash.
public final class StateCache: Sendable {
    public struct Entry: Codable, Sendable, Equatable {
        public var device: UInt64
        public var inode: UInt64
        public var size: Int64
        public var mtimeNanoseconds: Int64
        /// Verified digests by algorithm (sha256 always).
        public var digests: [String: String]
        /// sha256 of the resolved URL that served the file, and its validators.
        public var urlSHA256: String?
        public var etag: String?
        public var lastModified: String?

        enum CodingKeys: String, CodingKey {
            case device, inode, size, mtimeNanoseconds = "mtime_ns", digests, urlSHA256 = "url_sha256", etag
            case lastModified = "last_modified"
        }
    }

    /// The file as stored.
    struct Stored: Codable {
        var version = 1
        var files: [String: Entry]
    }

    /// The file as loaded when it is not in the layout ``write(_:to:)`` gives: ``Stored`` with
    /// each entry decoded straight into its compact form.
    private struct Loaded: Decodable {
        var version: Int
        var files: [String: Held]
    }

    /// The entries of a cache file's text for which `keep` holds (nil when it is not a version 1
    /// cache); read an entry at a time into a table made with room for `capacity`.
    ///
    /// A file in the layout ``write(_:to:)`` gives (one `"dest" : {` line per entry, its object
    /// ending on a line `    }`) is decoded an entry at a time: decoding a large cache whole held its text, the decoder's
    /// map of all of it and a table grown by doubling at once, the peak of a nightly rerun where
    /// every file was up to date (bench/results/history.md).
    /// Any other layout of valid JSON (a file edited by hand) is decoded whole.
    static func read(_ text: Data, capacity: Int, keeping keep: (String) -> Bool) -> Table? {
        if let files = readEntries(text, capacity: capacity, keeping: keep) { return files }
        guard let whole = try? JSONDecoder().decode(Loaded.self, from: text), whole.version == 1 else { return nil }
        return Table(whole.files.filter { keep($0.key) })
    }

    /// ``read(_:capacity:keeping:)`` an entry at a time; nil when the text is not in
    /// ``write(_:to:)``'s layout or an entry does not decode. JSON strings never hold a raw
    /// newline, so no line starts or ends inside one.
    static func readEntries(_ text: Data, capacity: Int, keeping keep: (String) -> Bool) -> Table? {
        text.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Table? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var position = 0
            /// The next line's bytes without its newline; nil at the end.
            func nextLine() -> Slice<UnsafeBufferPointer<UInt8>>? {
                guard position < bytes.count else { return nil }
                let start = position
                while position < bytes.count, bytes[position] != UInt8(ascii: "\n") { position += 1 }
                defer { position += 1 }
                return bytes[start..<position]
            }
            guard nextLine()?.elementsEqual("{".utf8) == true,
                  nextLine()?.elementsEqual("  \"files\" : {".utf8) == true else { return nil }
            let decoder = JSONDecoder()
            var files = Table(capacity: capacity)
            var line = nextLine()
            // Each entry: `    "dest" : {`, its fields, `    }` (`    },` but for the last).
            while let header = line, header.starts(with: "    \"".utf8), header.reversed().starts(with: "{ : ".utf8) {
                let quoted = header.dropFirst(4).dropLast(4)
                let key: String
                if quoted.dropFirst().dropLast().contains(UInt8(ascii: "\\")) {
                    guard let decoded = try? decoder.decode(String.self, from: Data(quoted)) else { return nil }
                    key = decoded
                } else {
                    key = String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
                }
                var end = nextLine()
                while let current = end, !current.elementsEqual("    }".utf8), !current.elementsEqual("    },".utf8) { end = nextLine() }
                guard let end else { return nil }
                if keep(key) {
                    let object = Data(bytes[(header.endIndex - 1)..<(end.startIndex + 5)])
                    guard let held = try? decoder.decode(Held.self, from: object) else { return nil }
                    files.set(held, for: key)
                }
                line = nextLine()
            }
            if files.isEmpty, line?.isEmpty == true { line = nextLine() }  // an empty cache's blank line
            guard line?.elementsEqual("  },".utf8) == true, nextLine()?.elementsEqual("  \"version\" : 1".utf8) == true,
                  nextLine()?.elementsEqual("}".utf8) == true, nextLine() == nil else { return nil }
            return files
        }
    }

    private let directory: SafeDirectory?
    /// The cache file's name in the output directory.
    private let fileName: String
    /// Entries by dest, and whether any changed since the load.
    private let stored: NIOLockedValueBox<(files: Table, changed: Bool)>

    /// Loads the cache `fileName` of the output directory; a missing or unreadable file is an
    /// empty cache. When it is missing and `seed` names another cache file, the entries of that
    /// one for the given dests are the start (a shard's first run after whole-manifest runs).
    /// `capacity`: how many entries the run may hold (its jobs), so the table is made once.
    public init(directory: SafeDirectory?, fileName: String = ToolFiles.stateCache,
                seed: (fileName: String, dests: Set<String>)? = nil, capacity: Int = 0) {
        self.directory = directory
        self.fileName = fileName
        func load(_ name: String, keeping keep: (String) -> Bool) -> Table? {
            directory?.contents(name).flatMap { Self.read($0, capacity: capacity, keeping: keep) }
        }
        var files = load(fileName, keeping: { _ in true })
            ?? seed.flatMap { seed in load(seed.fileName, keeping: seed.dests.contains) } ?? Table()
        // Made once at its full size: grown by doubling, the old and the new table were both
        // resident, and glibc kept the freed one (bench/results/history.md).
        files.reserveCapacity(capacity)
        self.stored = NIOLockedValueBox((files, false))
    }

    /// The entry for `dest` (relative to the output directory) if the file, whose `lstat` is
    /// `status`, is still the one it describes.
    func entry(for dest: String, status: stat?) -> Entry? {
        guard let identity = status.map(Self.identity) else { return nil }
        let held: Held? = stored.withLockedValue {
            guard let held = $0.files[dest], held.sameFile(as: identity) else { return nil }
            return held
        }
        return held?.entry
    }

    /// Records a verified file; `digests` must cover it as it is now (`status`).
    func record(_ dest: String, status: stat?, digests: [String: String], urlSHA256: String?,
                etag: String?, lastModified: String?) {
        guard var entry = status.map(Self.identity) else { return }
        entry.digests = digests
        entry.urlSHA256 = urlSHA256
        entry.etag = etag
        entry.lastModified = lastModified
        let held = Held(entry)
        stored.withLockedValue {
            if $0.files.set(held, for: dest) { $0.changed = true }
        }
    }

    /// Writes the cache if anything changed: a temporary file renamed over the old one, so a
    /// kill leaves the old or the new cache (no fsync: it is a hint).
    public func save() {
        let files: Table? = stored.withLockedValue {
            guard $0.changed else { return nil }
            $0.changed = false
            return $0.files
        }
        guard let files, let directory else { return }
        try? directory.writeAtomically(fileName) { (writer: inout FileWriter) throws(DownloadFailure) in
            try Self.write(files, to: &writer)
        }
    }

    /// The cache file's text (``Stored``) written one entry at a time, dests in UTF-8 order, in
    /// ``StableJSON``'s layout: the cache of a large manifest is never encoded whole in memory
    /// (20,000 entries took tens of MiB at once). Each entry by ``EntryTextWriter``, the bytes
    /// `JSONEncoder` makes of it (`JSONEncoder` was 3% of the CPU of 20,000 small files, at the
    /// end of the run where nothing else runs beside it).
    static func write(_ files: Table, to writer: inout FileWriter) throws(DownloadFailure) {
        try writer.write("{\n  \"files\" : {")
        let dests = files.dests.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for (position, dest) in dests.enumerated() {
            var text = EntryTextWriter()
            text.raw(position == 0 ? "\n    " : ",\n    ")
            text.string(dest)
            text.raw(" : {")
            let entry = files[dest]!.entry
            // In the order of the keys' names (`.sortedKeys`).
            text.field("device", entry.device)
            text.field("digests", entry.digests)
            text.field("etag", entry.etag)
            text.field("inode", entry.inode)
            text.field("last_modified", entry.lastModified)
            text.field("mtime_ns", entry.mtimeNanoseconds)
            text.field("size", entry.size)
            text.field("url_sha256", entry.urlSHA256)
            text.raw("\n    }")
            try writer.write(text.bytes)
        }
        try writer.write(files.isEmpty ? "\n\n  },\n  \"version\" : 1\n}" : "\n  },\n  \"version\" : 1\n}")
    }

    /// Whether two `stat`s are of the same, unchanged file (as the cache compares them).
    static func sameFile(_ a: stat, _ b: stat) -> Bool {
        Held(identity(a)).sameFile(as: identity(b))
    }

    private static func identity(_ info: stat) -> Entry {
        #if os(Linux)
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #else
        let mtime = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        #endif
        return Entry(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                     mtimeNanoseconds: mtime, digests: [:])
    }
}

private extension StateCache.Held {
    /// The device number is recorded but not compared: NFS clients number a mount's device
    /// anew on each machine and each mount, and a sharded run's task lands on any node, so a
    /// shared `output_dir` would be re-hashed on every run. Inode, size and mtime to the
    /// nanosecond still change with any write or replacement.
    func sameFile(as other: StateCache.Entry) -> Bool {
        inode == other.inode && size == other.size && mtimeNanoseconds == other.mtimeNanoseconds
    }
}

extension StateCache {
    /// An entry as held in memory: the two sha256 digests as 32 bytes instead of 64-character
    /// strings and a dictionary around one of them, and an IMF-fixdate `Last-Modified` as its
    /// seconds (``HTTPDateText``): about a quarter of the memory of an ``Entry`` (bench/results/history.md).
    struct Held: Equatable, Decodable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var mtimeNanoseconds: Int64
        /// `digests["sha256"]` when it is 64 lowercase hex digits, as bytes.
        var sha256: HexDigest?
        /// Every other digest (and a sha256 that is not such hex, from a hand-edited file).
        var otherDigests: [String: String]
        var urlSHA256: HexDigest?
        /// `urlSHA256` when it is not 64 lowercase hex digits.
        var urlSHA256Text: String?
        var etag: String?
        var lastModified: HTTPDateText?

        init(_ entry: Entry) {
            device = entry.device
            inode = entry.inode
            size = entry.size
            mtimeNanoseconds = entry.mtimeNanoseconds
            sha256 = entry.digests["sha256"].flatMap(HexDigest.init(hex:))
            // Filtered, not copied and then removed from: an emptied copy keeps its storage.
            otherDigests = sha256 == nil ? entry.digests
                : entry.digests.count == 1 ? [:] : entry.digests.filter { $0.key != "sha256" }
            urlSHA256 = entry.urlSHA256.flatMap(HexDigest.init(hex:))
            urlSHA256Text = urlSHA256 == nil ? entry.urlSHA256 : nil
            etag = entry.etag
            lastModified = entry.lastModified.map(HTTPDateText.init)
        }

        init(from decoder: any Decoder) throws {
            self.init(try Entry(from: decoder))
        }

        var entry: Entry {
            var digests = otherDigests
            if let sha256 { digests["sha256"] = sha256.hex }
            return Entry(device: device, inode: inode, size: size, mtimeNanoseconds: mtimeNanoseconds, digests: digests,
                         urlSHA256: urlSHA256?.hex ?? urlSHA256Text, etag: etag, lastModified: lastModified?.text)
        }
    }

    /// 32 bytes written as 64 lowercase hex digits (a sha256), kept as the bytes.
    struct HexDigest: Equatable {
        private var words: (UInt64, UInt64, UInt64, UInt64)

        /// Nil unless `hex` is exactly 64 lowercase hex digits (so ``hex`` gives it back).
        init?(hex: String) {
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            var digits = 0
            for byte in hex.utf8 {
                let value: UInt64
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt64(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = UInt64(byte - UInt8(ascii: "a") + 10)
                default: return nil
                }
                switch digits / 16 {
                case 0: words.0 = words.0 << 4 | value
                case 1: words.1 = words.1 << 4 | value
                case 2: words.2 = words.2 << 4 | value
                case 3: words.3 = words.3 << 4 | value
                default: return nil
                }
                digits += 1
            }
            guard digits == 64 else { return nil }
            self.words = words
        }

        var hex: String {
            var bytes = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
            return withUnsafeBytes(of: &bytes) { Digester.hex($0) }
        }

        static func == (left: Self, right: Self) -> Bool {
            left.words == right.words
        }
    }
}
