import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Writes one response body into `<dest>.part`: the transport thread only appends to a buffer;
/// full buffers (≥ ``writeSize``) are written with `pwrite` and hashed on the sink's own serial
/// queue, so the delegate queue never waits for the disk.
///
/// A small body never leaves the thread it ends on: beginning a body only records where it
/// starts (the writer truncates and rehashes before the body's first write), and ``drain()``
/// with no write in flight writes the rest on its caller's thread. A hop to the writer and back
/// per file was a third of a 4 KiB file's thread switches (bench/results/profile.md). The queue
/// itself is made at the first write that goes to it, so a small body costs none: making one
/// and the three `sync`s that read the writer's state through it were 13 of a 4 KiB file's
/// allocations.
///
/// Memory is bounded per job: when buffered plus queued bytes pass ``memoryCap``, ``append(_:)``
/// answers `.pause` and the owner cancels the transfer, waits for ``drain()``, and resumes from
/// ``flushedOffset`` with a new range request (URLSession has no backpressure). Bytes that were
/// already on their way keep being accepted up to twice the cap, so a pause wastes nothing in
/// the usual case; past that they are dropped (`.stop`) and fetched again.
///
/// A sink made with `hashes: false` serves one connection of a segmented download: it writes
/// ranges at their offsets into the shared, preallocated part (``beginRange(at:end:)``) and
/// leaves hashing to ``OrderedHasher``, which needs the bytes in file order.
///
/// `@unchecked`: its state is split between `lock` (what the transport's queue touches) and
/// `writer` (what only the writer touches: on `queue`, or on a caller with no write in flight),
/// which the checker cannot see.
package final class FileSink: @unchecked Sendable {
    package static let defaultWriteSize = 1 << 20
    package static let defaultMemoryCap = 8 << 20

    private let descriptor: Int32
    /// The part's path, for messages: made only for one.
    private let partPath: @Sendable () -> String
    private let algorithms: DigestAlgorithms
    /// Where full buffers are written; made at the first (guarded by `lock`).
    private var queue: DispatchQueue?
    private let writeSize: Int
    private let memoryCap: Int
    private let hashes: Bool
    /// Called by the writer after each write with the offset written through.
    private let onWrite: (@Sendable (Int64) -> Void)?
    /// Called by the writer when a body starts at this offset (the part cut there): bytes past
    /// it are written again, so a reader of the part must not trust what it read beyond.
    private let onBodyStart: (@Sendable (Int64) -> Void)?
    /// Simulates a slow disk (benchmarks and tests): writes take at least bytes / this rate.
    private let writeRate: Int64?
    private let lock = NIOLock()

    // Guarded by `lock`.
    private var buffer: ChunkBuffer
    /// Written buffers kept for reuse: a fresh 1 MiB allocation is a fresh mmap whose pages the
    /// kernel zeroes on first touch (bench/results/history.md).
    private var spares: [ChunkBuffer] = []
    private var queuedBytes = 0
    private var nextOffset: Int64 = 0
    private var failure: BatchFetchError?
    private var endOffset: Int64?
    private var exceeded = false
    /// Where a range was cut short (``cut(at:)``): its transfer still runs to the range's
    /// original end, whose bytes are not wanted.
    private var cutAt: Int64?
    private var reachedCut = false
    /// Where the next body starts, until a write or a drain carries it to the writer.
    private var pendingStart: Start?
    /// Callbacks waiting for the unwritten bytes to fall to a limit (backpressure).
    private var roomWaiters: [(limit: Int, callback: @Sendable () -> Void)] = []

    /// Held by whoever runs the writer's part (``perform(_:)``) or reads its state.
    private let writer = NIOLock()

    // Guarded by `writer`.
    private var digester: Digester
    private var written: Int64 = 0
    /// The digests cover bytes 0..<hashedThrough of the part; nil before the first body.
    private var hashedThrough: Int64?
    /// The part was made empty for this sink, and nothing has been prepared yet.
    private var startsEmpty: Bool

    /// Writes through `descriptor` (the part, opened by ``PartialFiles/openPart()``), which the
    /// sink owns and closes; does not truncate it. `partPath` is for messages. `expectedSize`
    /// (the manifest's `size`) sizes the first buffer: a 4 KiB file needs no 1 MiB mapping (a
    /// mapping and an unmapping per job: bench/results/profile.md, "Choices the code cites"); a larger body
    /// gets a full buffer at its first write. Without it, the first body whose length is known
    /// when it begins gets a buffer sized for it. `startsEmpty`: the part was just made, empty (an
    /// unnamed one), so a first body from 0 needs no look at its size.
    package init(descriptor: Int32, partPath: @autoclosure @escaping @Sendable () -> String, algorithms: DigestAlgorithms,
                writeSize: Int = defaultWriteSize, memoryCap: Int = defaultMemoryCap, hashes: Bool = true,
                onWrite: (@Sendable (Int64) -> Void)? = nil, onBodyStart: (@Sendable (Int64) -> Void)? = nil,
                writeRate: Int64? = nil, expectedSize: Int64? = nil, startsEmpty: Bool = false) {
        self.descriptor = descriptor
        self.startsEmpty = startsEmpty
        self.partPath = partPath
        self.algorithms = algorithms
        self.writeSize = writeSize
        self.memoryCap = max(memoryCap, writeSize * 2)
        self.hashes = hashes
        self.onWrite = onWrite
        self.onBodyStart = onBodyStart
        self.writeRate = writeRate
        digester = Digester(also: algorithms)
        buffer = ChunkBuffer(capacity: expectedSize.map { Self.firstBufferCapacity(forBody: $0, writeSize: writeSize) } ?? 0)
    }

    /// A buffer for a whole body of `length` bytes and one more delivery, or a full one.
    private static func firstBufferCapacity(forBody length: Int64, writeSize: Int) -> Int {
        let full = bufferCapacity(writeSize)
        return Int(clamping: max(0, length)) < full ? Int(length) + 16 * 1024 : full
    }

    /// A buffer holds a write and one more delivery (URLSession's are 16 KiB, NIO's up to 64).
    private static func bufferCapacity(_ writeSize: Int) -> Int {
        writeSize + 64 * 1024
    }

    deinit {
        close(descriptor)
    }

    /// Where a body begins: the writer prepares the part before its first bytes.
    private enum Start {
        /// A body from `offset` (``begin(at:end:)``): the part is truncated there and the
        /// digests brought to it.
        case body(Int64)
        /// A range of a segmented download (``beginRange(at:end:)``): nothing to truncate or hash.
        case range(Int64)
    }

    /// Prepares for a body that starts at `offset`: truncates the part there and brings the
    /// digests to `offset`. When the sink itself wrote exactly `offset` bytes (a resume within the
    /// run) its digests already cover them; otherwise they restart, and a resume of a partial from
    /// an earlier run reads those bytes back once. `end` is where the body must stop.
    package func begin(at offset: Int64, end: Int64?) {
        start(.body(offset), end: end)
    }

    /// Prepares for a range of a segmented download: bytes `offset..<end` of the part, which is
    /// neither truncated nor hashed here.
    package func beginRange(at offset: Int64, end: Int64) {
        start(.range(offset), end: end)
    }

    private func start(_ start: Start, end: Int64?) {
        lock.withLock {
            switch start {
            case .body(let offset), .range(let offset): nextOffset = offset
            }
            endOffset = end
            exceeded = false
            cutAt = nil
            reachedCut = false
            buffer.count = 0
            pendingStart = start
            // Without an expected size the sink starts with no buffer: the first body whose
            // length is known gets one sized for it (a small file needs no full buffer, whose
            // mapping and unmapping per job were a tenth of the CPU of a batch without sizes);
            // one of unknown length gets a full one at its first delivery.
            if buffer.capacity == 0, let end {
                buffer = ChunkBuffer(capacity: Self.firstBufferCapacity(forBody: end - nextOffset, writeSize: writeSize))
            }
        }
    }

    /// Runs under `writer`: makes the part ready for a body that starts as `start` says.
    private func prepare(_ start: Start) {
        let empty = startsEmpty
        startsEmpty = false
        switch start {
        case .range(let offset):
            written = offset
        case .body(let offset):
            onBodyStart?(offset)
            // A part that already ends at `offset` (a new, empty one) is left alone: on ext4 a
            // truncate to zero makes the close start writing the file back at once
            // (auto_da_alloc), one small write per job instead of the batch's.
            var info = stat()
            if !(empty && offset == 0),
               fstat(descriptor, &info) != 0 || Int64(info.st_size) != offset, ftruncate(descriptor, off_t(offset)) != 0 {
                record(Self.failure(errno, "cannot truncate \(partPath())"))
                return
            }
            let digestsCoverPrefix = hashedThrough == offset
            written = offset
            guard !digestsCoverPrefix else { return }
            digester = Digester(also: algorithms)
            hashedThrough = offset
            if offset > 0 {
                do {
                    try digester.feed(descriptor: descriptor, upTo: offset)
                } catch {
                    record(BatchFetchError(.ioError, "cannot read back \(partPath()): \(error)"))
                }
            }
        }
    }

    package enum AppendResult {
        /// Keep going.
        case accepted
        /// Accepted, but the unwritten bytes passed the cap: stop the transfer.
        case pause
        /// Not accepted: over twice the cap, past the body's end, or a write failed.
        case stop
    }

    /// Appends body bytes (called on the transport's queue).
    package func append(_ data: Data) -> AppendResult {
        lock.lock()
        defer { lock.unlock() }
        guard failure == nil, !exceeded, !reachedCut, queuedBytes + buffer.count <= 2 * memoryCap else { return .stop }
        var data = data
        if let cut = cutAt, nextOffset + Int64(data.count) >= cut {
            data = data.prefix(Int(max(0, cut - nextOffset)))
            reachedCut = true
        } else if let end = endOffset, nextOffset + Int64(data.count) > end {
            data = data.prefix(Int(max(0, end - nextOffset)))
            exceeded = true
        }
        if buffer.count + data.count > buffer.capacity { handOff(minimumCapacity: data.count) }
        buffer.append(data)
        nextOffset += Int64(data.count)
        if buffer.count >= writeSize { handOff() }
        if exceeded || reachedCut { return .stop }
        return queuedBytes + buffer.count <= memoryCap ? .accepted : .pause
    }

    /// Where a transport with backpressure resumes reading after a pause: half the cap.
    package var resumeLimit: Int { memoryCap / 2 }

    /// Calls `callback` once unwritten bytes are at most `limit`: at once, or from the writer
    /// after a write. A transport with backpressure resumes reading with it.
    package func whenUnwritten(atMost limit: Int, _ callback: @escaping @Sendable () -> Void) {
        let now: Bool = lock.withLock {
            if queuedBytes + buffer.count <= limit || failure != nil { return true }
            roomWaiters.append((limit, callback))
            return false
        }
        if now { callback() }
    }

    /// Bytes of the current body still to come, when its end is known.
    package var remainingBodyBytes: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return endOffset.map { $0 - nextOffset }
    }

    /// Ends the current range at `offset` instead of its end, when no byte past it has arrived:
    /// another connection fetches the rest (a steal). Once the body reaches `offset` the sink
    /// takes nothing more (``reachedCutEnd``).
    package func cut(at offset: Int64) -> Bool {
        lock.withLock {
            guard let end = endOffset, nextOffset <= offset, offset < end, !exceeded, !reachedCut else { return false }
            cutAt = offset
            reachedCut = nextOffset == offset
            return true
        }
    }

    /// The body reached the offset its range was cut at (``cut(at:)``).
    package var reachedCutEnd: Bool {
        lock.withLock { reachedCut }
    }

    /// Whether the body went past its expected end (the excess was not written).
    package var bodyTooLong: Bool {
        lock.lock()
        defer { lock.unlock() }
        return exceeded
    }

    /// Bytes handed to the writer and not yet written, plus bytes still buffered.
    package var unwrittenBytes: Int {
        lock.lock()
        defer { lock.unlock() }
        return queuedBytes + buffer.count
    }

    /// Writes what is buffered and waits until every queued write is done: on the caller's
    /// thread when no write is in flight (the whole of a small body), else on the writer.
    package func drain() async {
        let (work, inFlight) = lock.withLock { () -> (Work?, Int) in
            let inFlight = queuedBytes
            return (takeWork(), inFlight)
        }
        if inFlight == 0 {
            if let work { perform(work) }
            return
        }
        // Writes in flight: a queue exists, and the rest goes after them.
        let queue = lock.withLock { writerQueue() }
        if let work { queue.async { [self] in perform(work) } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    /// Gives its buffers back while nothing is buffered or queued: the sink waits idle while a
    /// segmented transfer writes through sinks of its own, and its buffers (a full one and its
    /// spares, a few MiB) would be held for nothing. The next body gets new ones.
    package func releaseBuffers() {
        lock.withLock {
            guard queuedBytes == 0, buffer.count == 0 else { return }
            buffer = ChunkBuffer(capacity: 0)
            spares.removeAll()
        }
    }

    /// Capacity of the buffers the sink holds, spares included.
    package var heldBufferBytes: Int {
        lock.withLock { buffer.capacity + spares.reduce(0) { $0 + $1.capacity } }
    }

    /// Bytes of the part known written (valid after ``drain()``).
    package var flushedOffset: Int64 {
        writer.withLock { written }
    }

    package var writeFailure: BatchFetchError? {
        lock.lock()
        defer { lock.unlock() }
        return failure
    }

    /// The digests of bytes 0..<flushedOffset (valid after ``drain()``).
    package func digests() -> [String: String] {
        writer.withLock { digester.finalize() }
    }

    /// fsync of the part file, for durability `strict`.
    package func sync() throws(BatchFetchError) {
        let result = writer.withLock { fsync(descriptor) }
        if result != 0 { throw Self.failure(errno, "fsync failed") }
    }

    /// What the writer does next: prepare the part for a new body, write a chunk at `offset`, or
    /// both.
    private struct Work {
        var start: Start?
        var chunk: ChunkBuffer?
        var offset: Int64 = 0
    }

    /// Moves the buffer to the writer queue (``takeWork(minimumCapacity:)``); an empty buffer,
    /// or a first one sized for a small body, grows instead. Caller holds `lock`.
    private func handOff(minimumCapacity: Int = 0) {
        guard buffer.count > 0 else {
            if buffer.capacity < minimumCapacity { buffer = spare(minimumCapacity) ?? ChunkBuffer(capacity: capacity(minimumCapacity)) }
            return
        }
        guard let work = takeWork(minimumCapacity: minimumCapacity) else { return }
        writerQueue().async { [self] in perform(work) }
    }

    /// The writer's queue, made on first use. Caller holds `lock`.
    private func writerQueue() -> DispatchQueue {
        if let queue { return queue }
        let made = DispatchQueue(label: "batchfetch.sink")
        queue = made
        return made
    }

    /// Takes the buffer for the writer, with the pending start, and a spare buffer of at least
    /// `minimumCapacity` (the delivery that is waiting for it), or a new one. With no delivery
    /// waiting and no spare, the next buffer is empty and the next delivery replaces it: the last
    /// hand-off of a body (``drain()``) needs none, and making a full one there was a 1 MiB
    /// mapping and unmapping per small file. Nil when there is nothing to do. Caller holds `lock`.
    private func takeWork(minimumCapacity: Int = 0) -> Work? {
        defer { pendingStart = nil }
        guard buffer.count > 0 else { return pendingStart.map { Work(start: $0) } }
        let chunk = buffer
        buffer = spare(minimumCapacity) ?? ChunkBuffer(capacity: minimumCapacity > 0 ? capacity(minimumCapacity) : 0)
        queuedBytes += chunk.count
        return Work(start: pendingStart, chunk: chunk, offset: nextOffset - Int64(chunk.count))
    }

    /// A full buffer's capacity, or more for a larger delivery.
    private func capacity(_ minimumCapacity: Int) -> Int {
        max(Self.bufferCapacity(writeSize), minimumCapacity)
    }

    /// A written buffer big enough for `minimumCapacity`, emptied. Caller holds `lock`.
    private func spare(_ minimumCapacity: Int) -> ChunkBuffer? {
        guard let spare = spares.popLast(), spare.capacity >= capacity(minimumCapacity) else { return nil }
        spare.count = 0
        return spare
    }

    /// Prepares the part, writes the chunk, and wakes whoever waits for room: on `queue`, or on
    /// the caller of ``drain()`` when no write is in flight.
    private func perform(_ work: Work) {
        writer.lock()
        if let start = work.start { prepare(start) }
        guard let chunk = work.chunk else {
            writer.unlock()
            return
        }
        let wrote = write(chunk, at: work.offset)
        writer.unlock()
        if wrote { onWrite?(work.offset + Int64(chunk.count)) }
        lock.lock()
        queuedBytes -= chunk.count
        if spares.count < 2 { spares.append(chunk) }
        let unwritten = queuedBytes + buffer.count
        let due = roomWaiters.filter { $0.limit >= unwritten || failure != nil }
        roomWaiters.removeAll { $0.limit >= unwritten || failure != nil }
        lock.unlock()
        for waiter in due { waiter.callback() }
    }

    /// Runs under `writer`: pwrite the whole chunk, then hash it while it is still in cache.
    private func write(_ chunk: ChunkBuffer, at offset: Int64) -> Bool {
        guard writeFailure == nil else { return false }
        if let writeRate { usleep(UInt32(min(Double(chunk.count) / Double(writeRate) * 1e6, 1e7))) }
        let ok = chunk.withBytes { bytes -> Bool in
            guard Self.pwriteFully(descriptor, bytes, at: offset) else {
                record(Self.failure(errno, "write failed"))
                return false
            }
            if hashes { digester.update(bytes) }
            return true
        }
        if ok {
            written = offset + Int64(chunk.count)
            hashedThrough = written
        }
        return ok
    }

    private func record(_ failure: BatchFetchError) {
        lock.lock()
        if self.failure == nil { self.failure = failure }
        lock.unlock()
    }

    /// `pread` until `count` bytes or the end of the file; returns the bytes read (-1 on error).
    package static func preadFully(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int64) -> Int {
        var done = 0
        while done < count {
            let got = pread(descriptor, buffer + done, count - done, off_t(offset) + off_t(done))
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return -1 }
            if got == 0 { break }
            done += got
        }
        return done
    }

    /// Writes all of `bytes` at `offset`, going on after a short write or `EINTR`: false (with
    /// `errno` set) when they could not all be written.
    package static func pwriteFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        var done = 0
        while done < bytes.count {
            let wrote = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if wrote < 0 && errno == EINTR { continue }
            if wrote < 0 { return false }
            if wrote == 0 {
                errno = EIO
                return false
            }
            done += wrote
        }
        return true
    }

    package static func failure(_ code: Int32, _ context: String) -> BatchFetchError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT: return BatchFetchError(.diskFull, "\(context): \(reason)")
        case EACCES, EPERM, EROFS: return BatchFetchError(.permissionDenied, "\(context): \(reason)")
        default: return BatchFetchError(.ioError, "\(context): \(reason)")
        }
    }
}

/// A fixed-capacity byte buffer with reference identity, so written buffers can be recycled
/// without copy-on-write surprises (a recycled `Data` still referenced by the writer's closure
/// would be copied on reuse, on the delegate queue).
///
/// A large buffer's storage is its own anonymous mapping, not malloc's: pages count in RSS only
/// once written, and return to the system when the buffer goes, instead of staying in a heap that
/// URLSession's many small allocations fragment. A small one (a small file's) comes from malloc,
/// which costs no system call.
///
/// `@unchecked`: raw storage passed from the sink's lock holder to its writer queue, one owner at
/// a time.
package final class ChunkBuffer: @unchecked Sendable {
    package let capacity: Int
    package var count = 0
    private let storage: UnsafeMutableRawPointer

    /// Buffers from this size up are mappings.
    package static let mappedFrom = 256 << 10

    package init(capacity: Int) {
        self.capacity = capacity
        guard capacity >= Self.mappedFrom else {
            storage = .allocate(byteCount: max(1, capacity), alignment: 16)
            return
        }
        let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != MAP_FAILED else { fatalError("cannot map \(capacity) bytes for a write buffer") }
        storage = mapped
    }

    deinit {
        if capacity >= Self.mappedFrom {
            munmap(storage, capacity)
        } else {
            storage.deallocate()
        }
    }

    package func append(_ data: Data) {
        data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            (storage + count).copyMemory(from: base, byteCount: bytes.count)
        }
        count += data.count
    }

    package func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        body(UnsafeRawBufferPointer(start: storage, count: count))
    }
}
