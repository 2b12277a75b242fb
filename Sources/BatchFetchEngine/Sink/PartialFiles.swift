import BatchFetchSpec
import Foundation

/// When published files reach stable storage (DESIGN.md §5).
public enum Durability: String, Sendable, CaseIterable {
    /// Rename as files complete; one `syncfs` before the report is written (default).
    case batch
    /// fsync each file before its rename, and its directory after.
    case strict
    /// No syncs.
    case none
}

/// The files of one destination: `dest`, `dest.part` and the sidecar `dest.part.json`, all in
/// the destination's directory so the final rename never crosses file systems.
public struct PartialFiles: Sendable {
    public let destPath: String
    public var partPath: String { destPath + DestPath.partSuffix }
    public var sidecarPath: String { partPath + ".json" }

    public init(destPath: String) {
        self.destPath = destPath
    }

    /// The partial on disk, if any; an unreadable sidecar counts as none (the bytes then cannot be
    /// trusted and are replaced).
    public func local() -> LocalPartial? {
        guard let bytes = LocalFile.regularFileSize(atPath: partPath) else { return nil }
        let sidecar = FileManager.default.contents(atPath: sidecarPath).flatMap {
            try? JSONDecoder().decode(Sidecar.self, from: $0)
        }
        return LocalPartial(fileSize: bytes, sidecar: sidecar)
    }

    /// Writes the sidecar in place, without temp file, rename or fsync: `Data.write(.atomic)`
    /// fsyncs, which made 2,000 small downloads spend seconds in the kernel. A torn sidecar only
    /// fails to decode, and then the partial is simply not resumed.
    public func writeSidecar(_ sidecar: Sidecar) throws(DownloadFailure) {
        guard let data = try? StableJSON.encode(sidecar) else {
            throw DownloadFailure(.ioError, "cannot encode the sidecar of \(destPath)")
        }
        let descriptor = open(sidecarPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileSink.failure(errno, "cannot write \(sidecarPath)") }
        defer { close(descriptor) }
        let written = data.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        if written != data.count { throw FileSink.failure(errno, "cannot write \(sidecarPath)") }
    }

    /// `mkdir -p` of the destination's directory, keeping errno for the error code.
    public func createDirectory() throws(DownloadFailure) {
        let directory = (destPath as NSString).deletingLastPathComponent
        var path = ""
        for component in directory.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                throw FileSink.failure(errno, "cannot create \(path)")
            }
        }
    }

    public func removePartial() {
        unlink(partPath)
        unlink(sidecarPath)
    }

    /// Renames the verified partial into place, replacing any old `dest` atomically, and drops the
    /// sidecar. With `strict` the directory is fsynced after the rename (the file already was).
    public func publish(durability: Durability) throws(DownloadFailure) {
        guard rename(partPath, destPath) == 0 else { throw FileSink.failure(errno, "cannot rename into \(destPath)") }
        unlink(sidecarPath)
        if durability == .strict {
            let directory = open((destPath as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                fsync(directory)
                close(directory)
            }
        }
    }

    /// Size of `dest` if it is a regular file.
    public func destSize() -> Int64? {
        LocalFile.regularFileSize(atPath: destPath)
    }
}
