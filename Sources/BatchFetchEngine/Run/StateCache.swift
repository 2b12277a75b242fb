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
    private struct Stored: Codable {
        var version = 1
        var files: [String: Entry]
    }

    private let directory: SafeDirectory?
    /// The cache file's name in the output directory.
    private let fileName: String
    /// Entries by dest, and whether any changed since the load.
    private let stored: NIOLockedValueBox<(files: [String: Entry], changed: Bool)>

    /// Loads the cache `fileName` of the output directory; a missing or unreadable file is an
    /// empty cache. When it is missing and `seed` names another cache file, the entries of that
    /// one for the given dests are the start (a shard's first run after whole-manifest runs).
    public init(directory: SafeDirectory?, fileName: String = ToolFiles.stateCache,
                seed: (fileName: String, dests: Set<String>)? = nil) {
        self.directory = directory
        self.fileName = fileName
        func load(_ name: String) -> [String: Entry]? {
            let stored = directory?.contents(name).flatMap { try? JSONDecoder().decode(Stored.self, from: $0) }
            return stored?.version == 1 ? stored!.files : nil
        }
        var files = load(fileName)
        if files == nil, let seed {
            files = load(seed.fileName)?.filter { seed.dests.contains($0.key) }
        }
        self.stored = NIOLockedValueBox((files ?? [:], false))
    }

    /// The entry for `dest` (relative to the output directory) if the file, whose `lstat` is
    /// `status`, is still the one it describes.
    func entry(for dest: String, status: stat?) -> Entry? {
        guard let identity = status.map(Self.identity) else { return nil }
        return stored.withLockedValue {
            guard let entry = $0.files[dest], entry.sameFile(as: identity) else { return nil }
            return entry
        }
    }

    /// Records a verified file; `digests` must cover it as it is now (`status`).
    func record(_ dest: String, status: stat?, digests: [String: String], urlSHA256: String?,
                etag: String?, lastModified: String?) {
        guard var entry = status.map(Self.identity) else { return }
        entry.digests = digests
        entry.urlSHA256 = urlSHA256
        entry.etag = etag
        entry.lastModified = lastModified
        stored.withLockedValue {
            if $0.files[dest] != entry {
                $0.files[dest] = entry
                $0.changed = true
            }
        }
    }

    /// Writes the cache if anything changed: a temporary file renamed over the old one, so a
    /// kill leaves the old or the new cache (no fsync: it is a hint).
    public func save() {
        let data: Data? = stored.withLockedValue {
            guard $0.changed else { return nil }
            $0.changed = false
            return try? StableJSON.encode(Stored(files: $0.files))
        }
        guard let data, let directory else { return }
        try? directory.writeAtomically(fileName, data)
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

private extension StateCache.Entry {
    /// The device number is recorded but not compared: NFS clients number a mount's device
    /// anew on each machine and each mount, and a sharded run's task lands on any node, so a
    /// shared `output_dir` would be re-hashed on every run. Inode, size and mtime to the
    /// nanosecond still change with any write or replacement.
    func sameFile(as other: StateCache.Entry) -> Bool {
        inode == other.inode && size == other.size && mtimeNanoseconds == other.mtimeNanoseconds
    }
}
