import Foundation
import NIOConcurrencyHelpers

/// The names each destination directory held when the run first looked into it, kept as hashes,
/// so that a job need not look up a name that was not there.
///
/// Why: a fresh batch looks up two names per job that do not exist — `dest`, to see whether it
/// is already up to date, and `<dest>.part`, an earlier run's leftover — and on ext4 a name that
/// is missing costs a search of the directory's blocks (its share of a small-file batch:
/// bench/results/profile.md, seventh round). One pass over the directory replaces them.
///
/// Sound because during a run only the job that owns a dest makes it or its part (dests are
/// unique, and the run lock keeps other batchfetch runs out of the output directory): a name
/// missing from the listing is still missing when its job asks, unless another program made it
/// since — the same race as one made just after a lookup, and handled the same way (publishing
/// replaces what is at `dest`; a `.part` it made is not touched). A directory is not listed, and
/// every name is looked up as before, when the pass could be wrong or cost more than it saves:
/// one whose names fold case (ext4 `casefold`, where a lookup of `A.bin` finds `a.bin`), one
/// whose case folding cannot be asked (the `ioctl` fails), one with more than `limit` entries,
/// and on systems other than Linux.
///
/// The pass also removes the temporary files batchfetch processes that are gone left there
/// (``SafeDirectory/isLeftoverTemporary(_:)``): a kill -9 between making one and renaming it —
/// a sidecar, which a segmented download rewrites often, or the state cache — left it for good.
package final class DirectoryListings: Sendable {
    /// Listings by directory, relative to the output directory; nil for one not listed.
    private let listings = NIOLockedValueBox<[String: Set<Int>?]>([:])
    private let limit: Int

    /// Directories with more than `limit` entries are not listed (the run passes a few times its
    /// number of jobs).
    package init(limit: Int) {
        self.limit = limit
    }

    /// Whether `name` may exist in the directory at `relative` (open as `directory`): false only
    /// when the directory's listing, made on the first call for it, did not have the name.
    package func mayContain(_ name: String, in relative: String, directory: SafeDirectory) -> Bool {
        var name = name
        let hash = name.withUTF8 { Self.hash(UnsafeRawBufferPointer($0)) }
        return listings.withLockedValue { listings in
            let names: Set<Int>?
            if let listed = listings[relative] {
                names = listed
            } else {
                names = Self.list(directory, limit: limit)
                listings[relative] = .some(names)
            }
            return names?.contains(hash) ?? true
        }
    }

    private static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    /// The hashes of the names in `directory`; nil when it is not to be listed (see the type).
    package static func list(_ directory: SafeDirectory, limit: Int) -> Set<Int>? {
        #if os(Linux)
        var flags: Int = 0
        guard ioctl(directory.descriptor, getFlags, &flags) == 0, flags & caseFoldFlag == 0 else { return nil }
        let copy = dup(directory.descriptor)
        guard copy >= 0 else { return nil }
        guard let stream = fdopendir(copy) else {
            close(copy)
            return nil
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names = Set<Int>()
        while true {
            errno = 0
            guard let entry = readdir(stream) else { return errno == 0 ? names : nil }
            guard names.count < limit else { return nil }
            let name = UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
            let bytes = UnsafeRawBufferPointer(start: name, count: strlen(name.assumingMemoryBound(to: CChar.self)))
            // Only a name that starts with "." and ends with ".tmp" is made a String to look at.
            if bytes.first == UInt8(ascii: "."), bytes.count > 4, bytes.suffix(4).elementsEqual(".tmp".utf8) {
                let text = String(decoding: bytes, as: UTF8.self)
                if SafeDirectory.isLeftoverTemporary(text) {
                    directory.unlink(text)
                    continue
                }
            }
            names.insert(hash(bytes))
        }
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// `FS_IOC_GETFLAGS` (`_IOR('f', 1, long)`) and `FS_CASEFOLD_FL`, from linux/fs.h, which
    /// Glibc's Swift module does not import.
    private static let getFlags = UInt(0x8008_6601)
    private static let caseFoldFlag = 0x4000_0000
    #endif
}
