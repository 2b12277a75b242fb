import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Hashes a segmented `.part` in file order while its segments are still arriving: whenever the
/// written prefix grows, the new bytes are read back (from the page cache, just written) and fed
/// to the digests on the hasher's own queue. The whole file is hashed once, mostly during the
/// transfer; only the last pieces remain when the last byte lands.
///
/// Its digests live in a lock only its own serial `queue` takes (so never contended): the
/// lock is what lets the checker see that.
final class OrderedHasher: Sendable {
    private struct Progress {
        var digester: Digester
        var hashedThrough: Int64 = 0
        var failure: BatchFetchError?
    }

    private let queue = DispatchQueue(label: "batchfetch.hasher")
    private let descriptor: Int32
    private let path: String
    private let progress: NIOLockedValueBox<Progress>

    /// Reads through `descriptor` (owned and closed by the hasher); `path` is for messages.
    init(descriptor: Int32, path: String, algorithms: DigestAlgorithms) {
        self.descriptor = descriptor
        self.path = path
        progress = NIOLockedValueBox(Progress(digester: Digester(also: algorithms)))
    }

    deinit {
        close(descriptor)
    }

    /// Hashes up to `offset` (bytes before it are written), in the background.
    func advance(to offset: Int64) {
        queue.async { [self] in
            progress.withLockedValue { progress in
                guard progress.failure == nil, offset > progress.hashedThrough else { return }
                let blockSize = 256 << 10
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 64)
                defer { buffer.deallocate() }
                while progress.hashedThrough < offset {
                    let want = Int(min(Int64(blockSize), offset - progress.hashedThrough))
                    let got = pread(descriptor, buffer.baseAddress!, want, off_t(progress.hashedThrough))
                    if got < 0 && errno == EINTR { continue }
                    guard got > 0 else {
                        progress.failure = got < 0 ? FileSink.failure(errno, "cannot read back \(path)")
                            : BatchFetchError(.ioError, "\(path) ended at \(progress.hashedThrough) while hashing")
                        return
                    }
                    progress.digester.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                    progress.hashedThrough += Int64(got)
                }
            }
        }
    }

    /// Hashes up to `total` and returns the digests of bytes `0..<total`.
    func finish(total: Int64) async -> Result<[String: String], BatchFetchError> {
        advance(to: total)
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                let result = progress.withLockedValue { progress -> Result<[String: String], BatchFetchError> in
                    if let failure = progress.failure { return .failure(failure) }
                    return .success(progress.digester.finalize())
                }
                continuation.resume(returning: result)
            }
        }
    }
}
