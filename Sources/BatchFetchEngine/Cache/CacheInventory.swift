import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// What a content cache holds, for `batchfetch cache`: its entries with their sizes and last
/// use, checked (`verify`), removed one by one (`rm`) or least recently used first (`gc`).
///
/// An entry's last use is the modification time of its `.verified` record: a run that uses or
/// fills entries touches their records in batches and at its end (``ContentCache/recordUses()``), not
/// the entries themselves — their ctime is part of what vouches for their content, and a
/// touch would make the next run hash them again.
package struct CacheInventory {
    package struct Entry: Sendable, Equatable {
        package let sha256: String
        package let size: Int64
        /// When a run last used or filled it; nil without a record.
        package let lastUse: Date?
    }

    /// What `verify` found wrong with one entry.
    package struct Problem: Sendable, Equatable {
        package let sha256: String
        package let message: String
    }

    package let path: String
    private let root: SafeDirectory

    /// The cache at `path`, which must exist.
    package init(path: String) throws(BatchFetchError) {
        self.path = path
        root = try SafeDirectory.root(path, create: false)
    }

    /// Every entry, by sha256. Anything in the layout that is not a regular file named by 64
    /// hex digits (a planted symlink, a temporary file) is no entry.
    package func entries() -> [Entry] {
        var found: [Entry] = []
        for prefix in names(in: "sha256") where prefix.utf8.count == 2 {
            guard let directory = try? root.subdirectory("sha256/" + prefix, create: false) else { continue }
            for name in names(in: "sha256/" + prefix) where ContentCache.location(name)?.directory == "sha256/" + prefix {
                guard let status = directory.regularFileStatus(name) else { continue }
                let record = directory.regularFileStatus(name + ContentCache.Identity.suffix)
                found.append(Entry(sha256: name, size: Int64(status.st_size), lastUse: record.map(Self.modified)))
            }
        }
        return found.sorted { $0.sha256 < $1.sha256 }
    }

    /// Hashes every entry; one whose content does not match its name is a problem, evicted when
    /// `fix`. A sound entry whose record no longer matches it gets a new record (its last use
    /// kept).
    package func verify(fix: Bool) -> (checked: Int, problems: [Problem]) {
        var problems: [Problem] = []
        let all = entries()
        for entry in all {
            guard let location = ContentCache.location(entry.sha256),
                  let directory = try? root.subdirectory(location.directory, create: false),
                  let descriptor = try? directory.openFile(location.name, O_RDONLY) else { continue }
            defer { close(descriptor) }
            var status = stat()
            fstat(descriptor, &status)
            let hashed: String
            do {
                hashed = try Digester.digests(ofDescriptor: descriptor).digests["sha256"] ?? ""
            } catch {
                problems.append(Problem(sha256: entry.sha256, message: "cannot be read: \(error)"))
                continue
            }
            if hashed != entry.sha256 {
                problems.append(Problem(sha256: entry.sha256, message: "its content's sha256 is \(hashed)"))
                if fix { ContentCache.remove(location.name, in: directory) }
            } else if ContentCache.Identity.recorded(in: directory, for: location.name) != ContentCache.Identity(status) {
                try? directory.writeAtomically(location.name + ContentCache.Identity.suffix, ContentCache.Identity(status).text)
                if let lastUse = entry.lastUse { Self.setModified(directory, location.name + ContentCache.Identity.suffix, to: lastUse) }
            }
        }
        return (all.count, problems)
    }

    /// Removes the entry of `sha256`; false when there is none.
    package func remove(sha256: String) -> Bool {
        guard let location = ContentCache.location(sha256),
              let directory = try? root.subdirectory(location.directory, create: false),
              directory.regularFileStatus(location.name) != nil else { return false }
        ContentCache.remove(location.name, in: directory)
        return true
    }

    /// Removes entries not used since `olderThan` before `now`, then the least recently used
    /// (never used first) until the rest fit in `maxSize` bytes; returns what it removed. Also
    /// removes temporary files that killed processes left.
    package func collect(maxSize: Int64?, olderThan: Double?, now: Date = Date()) -> [Entry] {
        sweepTemporaries()
        var remaining = entries().sorted { ($0.lastUse ?? .distantPast, $0.sha256) < ($1.lastUse ?? .distantPast, $1.sha256) }
        var removed: [Entry] = []
        if let olderThan {
            let cutoff = now.addingTimeInterval(-olderThan)
            removed = remaining.filter { ($0.lastUse ?? .distantPast) < cutoff }
            remaining.removeFirst(removed.count)
        }
        if let maxSize {
            var total = remaining.reduce(0) { $0 + $1.size }
            while total > maxSize, let oldest = remaining.first {
                remaining.removeFirst()
                removed.append(oldest)
                total -= oldest.size
            }
        }
        for entry in removed { _ = remove(sha256: entry.sha256) }
        return removed
    }

    private func sweepTemporaries() {
        for prefix in names(in: "sha256") where prefix.utf8.count == 2 {
            guard let directory = try? root.subdirectory("sha256/" + prefix, create: false) else { continue }
            for name in names(in: "sha256/" + prefix) where SafeDirectory.isLeftoverTemporary(name) { directory.unlink(name) }
        }
    }

    private func names(in relative: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path + "/" + relative)) ?? []
    }

    private static func modified(_ status: stat) -> Date {
        Date(timeIntervalSince1970: Double(status.mtimeNanoseconds) / 1e9)
    }

    /// Sets the modification time of `name` (a record: its last use).
    static func setModified(_ directory: SafeDirectory, _ name: String, to date: Date) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let omit = (1 << 30) - 2  // UTIME_OMIT, which the Glibc module does not export
        var times = [timespec(tv_sec: 0, tv_nsec: omit),
                     timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9))]
        _ = utimensat(directory.descriptor, name, &times, AT_SYMLINK_NOFOLLOW)
    }
}
