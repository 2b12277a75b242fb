import BatchFetchSpec
import CBatchFetchSystem
import Foundation
import NIOConcurrencyHelpers

/// Copies one open file into another the cheapest way the file system allows: a reflink
/// (`FICLONE`: the copy shares the blocks, instantly, on btrfs and xfs), else `copy_file_range`
/// (the kernel copies without the bytes passing through the process, and shares them where it
/// can, as NFS 4.2 and overlay file systems do), else reads and writes of 1 MiB.
///
/// Why three: a copy from the content cache must cost less than the download it saves; ext4
/// has no reflinks, and `copy_file_range` is refused across some file system pairs (EXDEV on
/// kernels before 5.3) and by some file systems (EINVAL, EOPNOTSUPP).
package enum FileCopy {
    /// How the bytes were copied (for the report's figures and the benchmark).
    package enum Method: String, Sendable {
        case reflink, kernel, readWrite = "read_write"
    }

    /// Copies all of `input` (from offset 0) into `output` (from offset 0, truncated to the
    /// copy's size); `names` the two for messages.
    @discardableResult
    package static func copy(from input: Int32, to output: Int32, names: (from: String, to: String)) throws(BatchFetchError) -> (bytes: Int64, method: Method) {
        var status = stat()
        guard fstat(input, &status) == 0 else { throw FileSink.failure(errno, "cannot read \(names.from)") }
        #if os(Linux)
        var target = stat()
        let devices = fstat(output, &target) == 0 ? Devices(from: UInt64(status.st_dev), to: UInt64(target.st_dev)) : nil
        if let devices, !refused.withLockedValue({ $0.contains(devices) }) {
            if batchfetch_clone(output, input) == 0 { return (Int64(status.st_size), .reflink) }
            // Refused for the pair of file systems (not for this file): not asked again.
            if [EOPNOTSUPP, EXDEV, EINVAL, ENOTTY].contains(errno) { refused.withLockedValue { _ = $0.insert(devices) } }
        }
        if let bytes = try kernelCopy(from: input, to: output, size: Int64(status.st_size), names: names) { return (bytes, .kernel) }
        #endif
        return (try readWrite(from: input, to: output, names: names), .readWrite)
    }

    #if os(Linux)
    private struct Devices: Hashable {
        var from: UInt64
        var to: UInt64
    }

    /// Pairs of devices (file systems) where a reflink was refused: a copy from the cache to
    /// an ext4 output directory asked once per run, not once per file.
    private static let refused = NIOLockedValueBox(Set<Devices>())

    /// `copy_file_range` until `size` bytes (or the end of `input`); nil (nothing written) when
    /// the kernel refuses this pair of files outright.
    private static func kernelCopy(from input: Int32, to output: Int32, size: Int64,
                                   names: (from: String, to: String)) throws(BatchFetchError) -> Int64? {
        var inputOffset: Int64 = 0
        var outputOffset: Int64 = 0
        while inputOffset < size || size == 0 {
            let copied = batchfetch_copy_file_range(input, &inputOffset, output, &outputOffset, 1 << 30)
            if copied == 0 { break }
            if copied < 0 {
                if inputOffset == 0, [EXDEV, EINVAL, EOPNOTSUPP, ENOSYS, EBADF].contains(errno) { return nil }
                throw FileSink.failure(errno, "cannot copy \(names.from) to \(names.to)")
            }
        }
        guard ftruncate(output, off_t(outputOffset)) == 0 else { throw FileSink.failure(errno, "cannot write \(names.to)") }
        return outputOffset
    }
    #endif

    private static func readWrite(from input: Int32, to output: Int32, names: (from: String, to: String)) throws(BatchFetchError) -> Int64 {
        let size = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let got = FileSink.preadFully(input, buffer, size, at: offset)
            guard got >= 0 else { throw FileSink.failure(errno, "cannot read \(names.from)") }
            if got == 0 { break }
            guard pwrite(output, buffer, got, off_t(offset)) == got else { throw FileSink.failure(errno, "cannot write \(names.to)") }
            offset += Int64(got)
        }
        guard ftruncate(output, off_t(offset)) == 0 else { throw FileSink.failure(errno, "cannot write \(names.to)") }
        return offset
    }
}
