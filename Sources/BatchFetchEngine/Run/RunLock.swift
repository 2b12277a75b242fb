import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// The run lock (Docs/Contracts.md §1, §3): an exclusive `flock` on `<output_dir>/.batchfetch.lock`, so
/// two runs never write one directory. The file holds the holder's pid for the error message;
/// the lock itself dies with the process, so a crashed run never leaves a stale lock behind.
public final class RunLock: Sendable {
    public struct Held: Error, Sendable {
        public var path: String
        /// The holder's pid, when it could be read.
        public var pid: Int32?
    }

    public static let fileName = ToolFiles.runLock
    public let path: String
    private let descriptor: Int32
    private let released = NIOLockedValueBox(false)

    /// Takes the lock; when another process holds it, throws ``Held`` — or, with `wait`, calls
    /// `waiting` with the holder and blocks until it is released.
    ///
    /// The lock lives in the directory's real path (symlinks resolved), so two runs that reach
    /// one directory by different names share it; the lock file itself is never a symlink.
    /// Errors are ``DownloadFailure``s naming the path (`permission_denied` for a read-only
    /// output directory).
    public init(directory: String, wait: Bool, waiting: (Held) -> Void = { _ in }) throws {
        let root = try SafeDirectory.root(directory, create: true)
        let real = realpath(directory, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? directory
        path = (real == "/" ? "" : real) + "/" + Self.fileName
        descriptor = try root.openFile(Self.fileName, O_RDWR | O_CREAT)
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let held = Held(path: path, pid: Self.holder(descriptor))
            guard wait else {
                close(descriptor)
                throw held
            }
            waiting(held)
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    close(descriptor)
                    throw held
                }
            }
        }
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
    }

    deinit {
        release()
    }

    /// Gives the lock up (also when the holder is deinitialised, or the process exits).
    public func release() {
        released.withLockedValue { released in
            guard !released else { return }
            released = true
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
    }

    private static func holder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
