import BatchFetchSpec
import Foundation

/// Hashes a segmented `.part` in file order while its segments are still arriving: whenever the
/// written prefix grows, the new bytes are read back (from the page cache, just written) and fed
/// to the digests on the hasher's own queue. The whole file is hashed once, mostly during the
/// transfer; only the last pieces remain when the last byte lands.
///
/// `@unchecked`: its digests are touched only on its own serial `queue`.
final class OrderedHasher: @unchecked Sendable {
    private let queue = DispatchQueue(label: "batchfetch.hasher")
    private let descriptor: Int32
    private let path: String
    // Touched only on `queue`.
    private var digester: Digester
    private var hashedThrough: Int64 = 0
    private var failure: DownloadFailure?

    /// Reads through `descriptor` (owned and closed by the hasher); `path` is for messages.
    init(descriptor: Int32, path: String, algorithms: [Checksum.Algorithm]) {
        self.descriptor = descriptor
        self.path = path
        digester = Digester(also: algorithms)
    }

    deinit {
        close(descriptor)
    }

    /// Hashes up to `offset` (bytes before it are written), in the background.
    func advance(to offset: Int64) {
        queue.async { [self] in
            guard failure == nil, offset > hashedThrough else { return }
            let blockSize = 256 << 10
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 64)
            defer { buffer.deallocate() }
            while hashedThrough < offset {
                let want = Int(min(Int64(blockSize), offset - hashedThrough))
                let got = pread(descriptor, buffer.baseAddress!, want, off_t(hashedThrough))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    failure = got < 0 ? FileSink.failure(errno, "cannot read back \(path)")
                        : DownloadFailure(.ioError, "\(path) ended at \(hashedThrough) while hashing")
                    return
                }
                digester.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                hashedThrough += Int64(got)
            }
        }
    }

    /// Hashes up to `total` and returns the digests of bytes `0..<total`.
    func finish(total: Int64) async -> Result<[String: String], DownloadFailure> {
        advance(to: total)
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                if let failure {
                    continuation.resume(returning: .failure(failure))
                } else {
                    continuation.resume(returning: .success(digester.finalize()))
                }
            }
        }
    }
}
