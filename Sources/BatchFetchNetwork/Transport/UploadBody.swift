import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The body of one upload request: an open file's bytes, between a prefix and a suffix (a
/// multipart form's parts around the file; both empty for a `PUT`), with its length known before
/// the first byte is sent (`Content-Length`, never chunked).
///
/// The file is read in blocks of ``blockSize`` with `pread` while the transport asks for them —
/// the next block is read and hashed while the previous one is being written, at most two in
/// memory — so memory stays bounded whatever the file's size; every block passes through sha256 on the way
/// out, so the sender can tell afterwards whether the bytes that left are the ones whose digest
/// it announced in `Content-Digest` (a second process writing the file is caught, not uploaded
/// under a false digest). One body per attempt: a retry reads the file again from its start.
public final class UploadBody: Sendable {
    public static let blockSize = 1 << 20

    private let descriptor: Int32
    private let fileSize: Int64
    /// Where in the file the bytes sent start (a part of a multipart upload); 0 for the whole.
    private let fileOffset: Int64
    private let prefix: Data
    private let suffix: Data
    /// Called before each block is sent (the run's `rate_limit`).
    private let pace: (@Sendable (Int) async -> Void)?
    /// Called after each block was handed to the connection (progress, the idle watch).
    private let sent: @Sendable (Int) -> Void
    private let state = NIOLockedValueBox(State())

    private struct State {
        var started = false
        var digester = Digester()
        var fileBytes: Int64 = 0
        var bytesSent: Int64 = 0
    }

    /// `descriptor` stays open and owned by the caller for as long as the request runs.
    /// `fileSize` bytes of it are sent from `fileOffset` on.
    public init(descriptor: Int32, fileSize: Int64, fileOffset: Int64 = 0, prefix: Data = Data(), suffix: Data = Data(),
                pace: (@Sendable (Int) async -> Void)? = nil, sent: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.descriptor = descriptor
        self.fileSize = fileSize
        self.fileOffset = fileOffset
        self.prefix = prefix
        self.suffix = suffix
        self.pace = pace
        self.sent = sent
    }

    /// The whole body's length: prefix, file and suffix.
    public var length: Int64 { Int64(prefix.count) + fileSize + Int64(suffix.count) }

    /// Whether the transport asked for the body: it had a connection and sent the request head.
    /// A request whose body never started provably never reached the server's application.
    public var started: Bool { state.withLockedValue { $0.started } }

    /// Body bytes handed to the connection so far.
    public var bytesSent: Int64 { state.withLockedValue { $0.bytesSent } }

    /// The sha256 (hex) of the file bytes sent, once the whole file was; nil before, or when the
    /// file ended early.
    public var sentSHA256: String? {
        state.withLockedValue { $0.fileBytes == fileSize ? $0.digester.finalize()["sha256"] : nil }
    }

    /// Produces the body block by block: `write` hands a block to the connection and its future
    /// completes once the connection took it (backpressure); the next block is read and hashed
    /// meanwhile, so at most two are in memory. The reads run on a dispatch queue of their own and
    /// the blocks are chained by futures: no step waits for Swift's cooperative thread pool, which
    /// other work can hold (a starved pool stalled uploads past their idle timeout). Only a run's
    /// `rate_limit` (an actor) is waited for in a task. The returned future fails when the file
    /// cannot be read or ends before its size, or a write fails.
    public func stream(on eventLoop: any EventLoop, _ write: @escaping @Sendable (ByteBuffer) -> EventLoopFuture<Void>)
        -> EventLoopFuture<Void> {
        state.withLockedValue { $0 = State(started: true) }
        let done = eventLoop.makePromise(of: Void.self)
        let queue = DispatchQueue(label: "batchfetch.upload.read")
        let fileBlocks = Int((fileSize + Int64(Self.blockSize) - 1) / Int64(Self.blockSize))
        /// Produces part `index` (the prefix, the file's blocks, the suffix), then starts writing
        /// it once `previous` (the write before) completed.
        @Sendable func produce(_ index: Int, after previous: EventLoopFuture<Void>) {
            let buffer: ByteBuffer
            do {
                if index == 0 {
                    buffer = ByteBuffer(bytes: prefix)
                } else if index <= fileBlocks {
                    buffer = try read(block: index - 1)
                } else if index == fileBlocks + 1 {
                    buffer = ByteBuffer(bytes: suffix)
                } else {
                    previous.cascade(to: done)
                    return
                }
            } catch {
                previous.whenComplete { _ in done.fail(error) }
                return
            }
            previous.whenComplete { result in
                if case .failure(let error) = result { return done.fail(error) }
                let written = self.emit(buffer, on: eventLoop, write)
                queue.async { produce(index + 1, after: written) }
            }
        }
        queue.async { produce(0, after: eventLoop.makeSucceededVoidFuture()) }
        return done.futureResult
    }

    /// Block `block` of the file, hashed.
    private func read(block: Int) throws -> ByteBuffer {
        let offset = Int64(block) * Int64(Self.blockSize)
        let want = Int(min(Int64(Self.blockSize), fileSize - offset))
        var buffer = ByteBufferAllocator().buffer(capacity: want)
        let got = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
            var got = -1
            repeat { got = pread(descriptor, pointer.baseAddress!, want, off_t(fileOffset + offset)) } while got < 0 && errno == EINTR
            guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            return got
        }
        guard got == want else { throw UploadSourceShrank(expected: fileSize, read: offset + Int64(max(got, 0))) }
        buffer.withUnsafeReadableBytes { bytes in
            state.withLockedValue {
                $0.digester.update(bytes)
                $0.fileBytes += Int64(got)
            }
        }
        return buffer
    }

    /// Writes one part (after the run's `rate_limit`, if any) and counts it once taken.
    private func emit(_ buffer: ByteBuffer, on eventLoop: any EventLoop,
                      _ write: @escaping @Sendable (ByteBuffer) -> EventLoopFuture<Void>) -> EventLoopFuture<Void> {
        guard buffer.readableBytes > 0 else { return eventLoop.makeSucceededVoidFuture() }
        let written: EventLoopFuture<Void>
        if let pace {
            let paced = eventLoop.makePromise(of: Void.self)
            paced.completeWithTask { await pace(buffer.readableBytes) }
            written = paced.futureResult.flatMap { write(buffer) }
        } else {
            written = write(buffer)
        }
        return written.map {
            self.state.withLockedValue { $0.bytesSent += Int64(buffer.readableBytes) }
            self.sent(buffer.readableBytes)
        }
    }
}

/// The file ended before the size it had when the upload began: another process truncated it.
public struct UploadSourceShrank: Error, Sendable {
    public var expected: Int64
    public var read: Int64
}
