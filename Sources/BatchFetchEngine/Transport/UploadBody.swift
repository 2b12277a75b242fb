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
    public init(descriptor: Int32, fileSize: Int64, prefix: Data = Data(), suffix: Data = Data(),
                pace: (@Sendable (Int) async -> Void)? = nil, sent: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.descriptor = descriptor
        self.fileSize = fileSize
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

    /// Produces the body block by block: each block is handed to `write` (which returns once the
    /// connection took it: backpressure) while the next is read, so at most two blocks are in
    /// memory. Throws when the file cannot be read or ends before its size.
    public func write(_ write: @escaping @Sendable (ByteBuffer) async throws -> Void) async throws {
        state.withLockedValue { $0 = State(started: true) }
        var writing: Task<Void, any Error>?
        defer { writing?.cancel() }
        /// Waits for the block being written, then starts writing `buffer`.
        func hand(_ buffer: ByteBuffer) async throws {
            try await writing?.value
            writing = Task { try await self.emit(buffer, write) }
        }
        if !prefix.isEmpty { try await hand(ByteBuffer(bytes: prefix)) }
        var offset: Int64 = 0
        while offset < fileSize {
            let want = Int(min(Int64(Self.blockSize), fileSize - offset))
            var buffer = ByteBufferAllocator().buffer(capacity: want)
            let got = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
                var got = -1
                repeat { got = pread(descriptor, pointer.baseAddress!, want, off_t(offset)) } while got < 0 && errno == EINTR
                guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                return got
            }
            guard got > 0 else { throw UploadSourceShrank(expected: fileSize, read: offset) }
            buffer.withUnsafeReadableBytes { bytes in state.withLockedValue { $0.digester.update(bytes) } }
            state.withLockedValue { $0.fileBytes += Int64(got) }
            offset += Int64(got)
            try await hand(buffer)
        }
        if !suffix.isEmpty { try await hand(ByteBuffer(bytes: suffix)) }
        try await writing?.value
    }

    private func emit(_ buffer: ByteBuffer, _ write: (ByteBuffer) async throws -> Void) async throws {
        await pace?(buffer.readableBytes)
        try await write(buffer)
        state.withLockedValue { $0.bytesSent += Int64(buffer.readableBytes) }
        sent(buffer.readableBytes)
    }
}

/// The file ended before the size it had when the upload began: another process truncated it.
public struct UploadSourceShrank: Error, Sendable {
    public var expected: Int64
    public var read: Int64
}
