import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// The bytes of a part being downloaded, handed to libarchive in order as they become final —
/// as the one stream's sink writes them (``FileSink``'s `onWrite`) or as the written prefix of a
/// segmented transfer grows (``SegmentedTransfer``) — for an unpacking that runs while the
/// archive arrives. It blocks
/// the reading thread until more is written or the download ends; it gives up — the unpacking
/// fails and the archive is unpacked after verification instead — when a body starts below what
/// was read (a retry from 0, another mirror: those bytes are written again), so that a tree is
/// never made of bytes a restart replaced.
final class ArchiveStream: @unchecked Sendable {
    private let descriptor: Int32
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var written: Int64
    /// Bytes handed out, the block being read included.
    private var read: Int64 = 0
    private var end: Int64?
    private var abandoned = false
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: ArchiveStream.blockSize, alignment: 16)

    /// Bytes handed to libarchive at a time: a few of its own decompression blocks; more would
    /// only be held (1 MiB was no faster).
    static let blockSize = 256 << 10

    /// Reads the part open at `descriptor` (a duplicate, owned here), of which `written` bytes
    /// from its start are final already (a resumed part's).
    init(descriptor: Int32, written: Int64) {
        self.descriptor = descriptor
        self.written = written
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

    /// Bytes before `offset` are written and final (a sink wrote through it, or a segmented
    /// transfer's prefix reached it).
    func wrote(through offset: Int64) {
        condition.withLock {
            written = max(written, offset)
            condition.broadcast()
        }
    }

    /// A body starts at `offset`: what lies past it is written again.
    func bodyStarts(at offset: Int64) {
        condition.withLock {
            if offset < read { abandoned = true }
            written = offset
            condition.broadcast()
        }
    }

    /// The archive is complete at `size` bytes (it verified): the reader gets the rest, then the end.
    func finish(size: Int64) {
        condition.withLock {
            end = size
            written = max(written, size)
            condition.broadcast()
        }
    }

    /// The download failed or its bytes cannot be followed in order: the reader stops.
    func abandon() {
        condition.withLock {
            abandoned = true
            condition.broadcast()
        }
    }

    var wasAbandoned: Bool { condition.withLock { abandoned } }

    /// The next block, blocking until there is one; an empty block at the end; nil when given up.
    func next() -> UnsafeRawBufferPointer? {
        let range: Range<Int64>? = condition.withLock {
            while !abandoned, written <= read, end.map({ read < $0 }) ?? true { condition.wait() }
            if abandoned { return nil }
            let stop = min(written, end ?? written, read + Int64(Self.blockSize))
            defer { read = stop }
            return read..<stop
        }
        guard let range else { return nil }
        if range.isEmpty { return UnsafeRawBufferPointer(start: buffer, count: 0) }
        let got = FileSink.preadFully(descriptor, buffer, Int(range.count), at: range.lowerBound)
        // Checked after the read: a body that started below its end while it was read may have
        // replaced what it returned.
        guard got == Int(range.count), !wasAbandoned else { return nil }
        return UnsafeRawBufferPointer(start: buffer, count: got)
    }
}

/// An unpacking that runs on a thread of its own while the archive downloads
/// (Docs/Archives.md, "Streaming"): entries go into the tree's temporary sibling as their bytes
/// arrive; once the archive verified, ``result(size:)`` waits for the rest and the caller swaps
/// the tree in. Nothing is published from it before that: a failed download or verification
/// removes the sibling.
///
/// Waiting for the unpacking holds no thread: a caller's continuation is kept until the
/// unpacking thread ends and resumes it.
final class StreamingExtraction: Sendable {
    let stream: ArchiveStream
    private let extraction: ArchiveExtraction
    private let state = NIOLockedValueBox(State.running(waiting: []))

    private enum State {
        case running(waiting: [CheckedContinuation<Result<ArchiveExtraction.Unpacked, BatchFetchError>, Never>])
        case ended(Result<ArchiveExtraction.Unpacked, BatchFetchError>)
    }

    /// Starts unpacking the part open at `descriptor` (duplicated), of which `written` bytes are
    /// already final, for an archive of `expectedSize` bytes if known.
    init(extraction: ArchiveExtraction, descriptor: Int32, written: Int64, expectedSize: Int64?) {
        stream = ArchiveStream(descriptor: dup(descriptor), written: written)
        self.extraction = extraction
        let thread = Thread { [self] in
            let unpacked = Result { () throws(BatchFetchError) in
                try extraction.unpackStreaming(stream, archiveSize: expectedSize)
            }
            let waiting = state.withLockedValue { state in
                defer { state = .ended(unpacked) }
                if case .running(let waiting) = state { return waiting }
                return []
            }
            for continuation in waiting { continuation.resume(returning: unpacked) }
        }
        thread.name = "batchfetch.extract"
        thread.start()
    }

    /// The unpacked sibling once the reader got all `size` bytes of the verified archive, or why
    /// it could not be made (the caller then unpacks after verification, as without streaming).
    func result(size: Int64) async -> Result<ArchiveExtraction.Unpacked, BatchFetchError> {
        stream.finish(size: size)
        return await withCheckedContinuation { continuation in
            let ended: Result<ArchiveExtraction.Unpacked, BatchFetchError>? = state.withLockedValue { state in
                switch state {
                case .ended(let outcome):
                    return outcome
                case .running(let waiting):
                    state = .running(waiting: waiting + [continuation])
                    return nil
                }
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    /// Stops the unpacking and removes what it wrote; returns once it did.
    func cancel() async {
        stream.abandon()
        if case .success(let unpacked) = await result(size: 0) { extraction.discard(unpacked) }
    }
}
