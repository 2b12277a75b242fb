import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// The run lock (Docs/Contracts.md §1, §3, §7): an exclusive `flock` on `<output_dir>/.batchfetch.lock`,
/// so two runs never write one directory. The file holds the holder's pid for the error message;
/// the lock itself dies with the process, so a crashed run never leaves a stale lock behind.
///
/// A shard's run holds `.batchfetch.lock` shared and its own `.batchfetch.shard-K-of-N.lock`
/// exclusively: the shards of one split never touch the same file (``ShardAssignment``), so
/// they run side by side in one directory, while a second run of the same shard, or a
/// whole-manifest run, is kept out — and a whole-manifest run keeps every shard out.
package final class RunLock: Sendable {
    package struct Held: Error, Sendable {
        package var path: String
        /// The holder's pid, when it could be read.
        package var pid: Int32?
        /// The holders are shard runs (holding the directory's lock shared), which have no one pid.
        package var byShards = false
    }

    package static let fileName = ToolFiles.runLock
    /// The directory's lock file's path, and the shard's own when a shard holds it.
    package let path: String
    /// The descriptors whose locks are held: the directory's, then the shard's.
    private let descriptors: [Int32]
    private let released = NIOLockedValueBox(false)

    /// Takes the lock — for `shard`, the directory's shared and the shard's exclusively; when
    /// another process holds it, throws ``Held`` — or, with `wait`, calls `waiting` with the
    /// holder and blocks until it is released.
    ///
    /// The lock lives in the directory's real path (symlinks resolved), so two runs that reach
    /// one directory by different names share it; the lock file itself is never a symlink.
    /// Errors are ``BatchFetchError``s naming the path (`permission_denied` for a read-only
    /// output directory; a file system without `flock`, such as Lustre mounted without
    /// `-o flock`, says so rather than claiming another run).
    package init(directory: String, shard: Shard? = nil, wait: Bool, waiting: (Held) -> Void = { _ in }) throws {
        let root = try SafeDirectory.root(directory, create: true)
        let real = realpath(directory, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? directory
        let prefix = (real == "/" ? "" : real) + "/"
        var held: [Int32] = []
        do {
            held.append(try Self.lock(root, Self.fileName, prefix: prefix, exclusive: shard == nil, wait: wait, waiting: waiting))
            if let shard {
                held.append(try Self.lock(root, shard.fileName(Self.fileName), prefix: prefix, exclusive: true,
                                          wait: wait, waiting: waiting))
            }
        } catch {
            for descriptor in held { close(descriptor) }
            throw error
        }
        path = prefix + (shard?.fileName(Self.fileName) ?? Self.fileName)
        descriptors = held
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(held.last!, 0)
        _ = pwrite(held.last!, pid, pid.count, 0)
    }

    deinit {
        release()
    }

    /// Gives the lock up (also when the holder is deinitialised, or the process exits).
    package func release() {
        released.withLockedValue { released in
            guard !released else { return }
            released = true
            for descriptor in descriptors.reversed() {
                flock(descriptor, LOCK_UN)
                close(descriptor)
            }
        }
    }

    /// Opens `name` and locks it; returns the descriptor holding the lock.
    private static func lock(_ root: SafeDirectory, _ name: String, prefix: String, exclusive: Bool, wait: Bool,
                             waiting: (Held) -> Void) throws -> Int32 {
        let descriptor = try root.openFile(name, O_RDWR | O_CREAT)
        let mode = exclusive ? LOCK_EX : LOCK_SH
        if flock(descriptor, mode | LOCK_NB) == 0 { return descriptor }
        guard errno == EWOULDBLOCK else {
            let failure = unsupported(errno, prefix + name)
            close(descriptor)
            throw failure
        }
        let held = holder(descriptor, path: prefix + name)
        guard wait else {
            close(descriptor)
            throw held
        }
        waiting(held)
        while flock(descriptor, mode) != 0 {
            guard errno == EINTR else {
                let failure = unsupported(errno, prefix + name)
                close(descriptor)
                throw failure
            }
        }
        return descriptor
    }

    private static func unsupported(_ code: Int32, _ path: String) -> BatchFetchError {
        BatchFetchError(.ioError, "cannot lock \(path): \(String(cString: strerror(code))) "
            + "(the file system may not support flock; Lustre needs -o flock)")
    }

    /// Who holds the lock on `descriptor`: shard runs when a shared lock can be had (and is
    /// given back at once), else the exclusive holder, whose pid is in the file.
    private static func holder(_ descriptor: Int32, path: String) -> Held {
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return Held(path: path, pid: nil, byShards: true)
        }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return Held(path: path, pid: nil) }
        let text = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Held(path: path, pid: Int32(text))
    }
}
