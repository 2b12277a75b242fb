import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Performs a segmented download (Docs/Contracts.md §3): several connections fetch ranges chosen by a
/// ``SegmentPlanner`` and write them at their offsets into one preallocated `.part`, each through
/// its own ``FileSink``; an ``OrderedHasher`` follows the written prefix. The sidecar lists the
/// written ranges after every write (1 MiB), so a SIGKILL loses at most a write per connection,
/// and a rerun resumes each gap.
final class SegmentedTransfer: Sendable {
    enum Outcome {
        /// Every byte is written; the digests cover the whole part.
        case complete(digests: [String: String])
        /// Segmenting ended early with the part written up to `prefix` (and perhaps beyond).
        case stopped(prefix: Int64, BatchFetchError)
    }

    /// What the transfer needs from its job.
    struct Setup {
        var start: DownloadStateMachine.SegmentStart
        var connections: Int
        var mirrorIndex: Int
        /// The URL as it may be printed, for attempt records.
        var displayURL: String
        var files: PartialFiles
        var algorithms: DigestAlgorithms
        var context: JobDownloader.Context
        /// The job's transport (the run's, or one made for its TLS settings).
        var transport: any HTTPTransport
        var progress: JobProgress
        var idleTimeout: Duration
        var deadline: ContinuousClock.Instant?
        var planner: SegmentPlanner.Configuration
        /// The request for one range (method, headers, Range and If-Range).
        var request: @Sendable (Range<Int64>) -> TransportRequest
        /// Told each time the written prefix grows, as the hasher is: an unpacking that reads
        /// the archive in order while it arrives (``ArchiveStream``).
        var followPrefix: (@Sendable (Int64) -> Void)?
    }

    /// What the connections share, changed by each of them.
    private struct State {
        var planner: SegmentPlanner
        /// Each connection's range and how far it is written.
        var active: [Int: (range: Range<Int64>, written: Int64)] = [:]
        /// The range requests that failed (the planner counts them for the retry policy).
        var attempts = AttemptLog()
        var received: Int64 = 0
        /// Made once the part is ready, before any connection starts.
        var hasher: OrderedHasher?
    }

    private let setup: Setup
    private let state: NIOLockedValueBox<State>
    /// Serializes sidecar writes, which come from every connection's sink queue.
    private let sidecarWrites = NIOLock()
    /// The other connections start once the first range's head proved the content: when the
    /// file changed, one refused response is in flight instead of one per connection.
    private let firstHead = Gate()

    init(_ setup: Setup) {
        self.setup = setup
        state = NIOLockedValueBox(State(planner: SegmentPlanner(configuration: setup.planner, done: setup.start.done)))
    }

    /// The range requests that failed, as attempt records.
    var attempts: [AttemptRecord] { state.withLockedValue { $0.attempts.records } }
    /// Body bytes received over every connection.
    var received: Int64 { state.withLockedValue { $0.received } }

    private var hasher: OrderedHasher { state.withLockedValue { $0.hasher! } }

    func run() async -> Outcome {
        do {
            try preallocate()
            try writeSidecar()
            let hasher = OrderedHasher(descriptor: try setup.files.openPart(), path: setup.files.partPath, algorithms: setup.algorithms)
            state.withLockedValue { $0.hasher = hasher }
        } catch {
            return .stopped(prefix: setup.start.done.prefix, error)
        }
        prefixGrew(to: setup.start.done.prefix)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<setup.connections {
                group.addTask {
                    if index > 0 { await self.firstHead.wait() }
                    await self.connection(index)
                }
            }
        }
        let (complete, prefix, reason) = state.withLockedValue { ($0.planner.isComplete, $0.planner.done.prefix, $0.planner.stopReason) }
        guard complete else {
            try? writeSidecar()
            return .stopped(prefix: prefix, reason ?? BatchFetchError(.connection, "segments ended early"))
        }
        switch await hasher.finish(total: setup.start.total) {
        case .success(let digests): return .complete(digests: digests)
        case .failure(let failure): return .stopped(prefix: prefix, failure)
        }
    }

    /// One connection: claims ranges until none are left or segmenting stops.
    private func connection(_ key: Int) async {
        let sink: FileSink
        do {
            // Each connection holds its share of the job's cap, written in halves of it at most.
            let share = TransferPolicy.connectionShare(memoryCap: setup.context.memoryCap, connections: setup.connections,
                                                       backpressure: setup.transport.hasBackpressure)
            let files = setup.files
            sink = FileSink(descriptor: try files.openPart(), partPath: files.partPath, algorithms: [],
                            writeSize: min(setup.context.writeSize, Int(setup.planner.pieceSize) / 4, share / 2),
                            memoryCap: share, hashes: false,
                                onWrite: { [self] written in progressed(key, to: written) },
                                writeRate: setup.context.simulatedDiskRate.map { $0 / Int64(setup.connections) })
        } catch {
            stop(error)
            return
        }
        while let range = state.withLockedValue({ state -> Range<Int64>? in
            let range = state.planner.claim()
            if let range { state.active[key] = (range, range.lowerBound) }
            return range
        }) {
            let verdict = await fetch(range, sink: sink, key: key)
            guard case .retry(_, let delay) = verdict else { continue }
            // The retry policy never returns a wait past the deadline.
            guard await setup.context.interruption.sleep(.seconds(delay.draw())) else {
                stop(BatchFetchError(.interrupted, "the run was interrupted"))
                return
            }
        }
    }

    /// Fetches one range and returns the planner's verdict on how it went.
    private func fetch(_ range: Range<Int64>, sink: FileSink, key: Int) async -> SegmentPlanner.Verdict {
        // After a refusal the others start only once the stop is recorded, and then claim nothing.
        defer { firstHead.open() }
        let request = setup.request(range)
        let judge = state.withLockedValue { $0.planner }
        let handler = AttemptHandler<RangeHead>(
            // Never shed or cancelled: without backpressure a range fits its sink (see
            // TransferPolicy.pieceSize); with it, the sink holds the reads.
            sink: sink, finishWithin: setup.planner.pieceSize, progress: setup.progress,
            decide: { [firstHead] head in
                let verdict = judge.judge(head, for: range)
                if verdict == .accept {
                    sink.beginRange(at: range.lowerBound, end: range.upperBound)
                    firstHead.open()
                }
                return RangeHead(verdict: verdict, status: head.status)
            })
        let outcome = await Exchange.perform(
            request, handler: handler, transport: setup.transport, hosts: setup.context.hosts,
            interruption: setup.context.interruption, idleTimeout: setup.idleTimeout, deadline: setup.deadline,
            proceed: { [state] in state.withLockedValue { $0.planner.stopReason == nil } })
        await sink.drain()
        let head = outcome?.decision
        let written = head?.verdict == .accept ? sink.flushedOffset : range.lowerBound
        let prefix = state.withLockedValue { state -> Int64 in
            state.active[key] = nil
            state.received += outcome?.received ?? 0
            state.planner.release(range, writtenThrough: written)
            return state.planner.done.prefix
        }
        prefixGrew(to: prefix)
        try? writeSidecar()

        // Not started: segmenting had stopped, or the run was interrupted.
        guard let outcome else { return stop(state.withLockedValue { $0.planner.stopReason } ?? BatchFetchError(.interrupted, "the run was interrupted")) }
        let end = SegmentPlanner.RangeEnd(
            head: head?.verdict, status: head?.status, written: written,
            failure: outcome.failure, shed: outcome.overflow, diskFailure: sink.writeFailure,
            pastDeadline: setup.deadline.map { .now >= $0 } ?? false, remaining: remaining)
        let (verdict, recorded) = state.withLockedValue { $0.planner.ended(range, end) }
        if let recorded { record(status: head?.status, recorded) }
        return verdict
    }

    /// Seconds left before the job's deadline, for the retry policy.
    private var remaining: Double? {
        setup.deadline.map { ($0 - .now).inSeconds }
    }

    /// Ends segmenting: no more ranges are handed out; those in flight (at most a range each)
    /// finish and are kept.
    @discardableResult
    private func stop(_ failure: BatchFetchError) -> SegmentPlanner.Verdict {
        state.withLockedValue { $0.planner.stop(failure) }
        return .stop(failure)
    }

    private func record(status: Int?, _ failure: BatchFetchError) {
        state.withLockedValue {
            $0.attempts.record(mirror: setup.mirrorIndex, url: setup.displayURL, status: status, failure: failure)
        }
    }

    /// Reserves the whole file at once: no fragmentation, and a full disk fails now, not at 90 %.
    private func preallocate() throws(BatchFetchError) {
        let descriptor = try setup.files.openPart()
        defer { close(descriptor) }
        #if os(Linux)
        let result = posix_fallocate(descriptor, 0, off_t(setup.start.total))
        if result != 0 && result != EOPNOTSUPP && result != EINVAL {
            throw FileSink.failure(result, "cannot reserve \(setup.start.total) bytes for \(setup.files.partPath)")
        }
        #endif
        if ftruncate(descriptor, off_t(setup.start.total)) != 0 {
            throw FileSink.failure(errno, "cannot size \(setup.files.partPath)")
        }
    }

    /// Bytes `0..<prefix` are written and final: the hasher and whoever follows the prefix read them.
    private func prefixGrew(to prefix: Int64) {
        hasher.advance(to: prefix)
        setup.followPrefix?(prefix)
    }

    /// A connection's sink wrote through `written` (called on the sink's queue).
    private func progressed(_ key: Int, to written: Int64) {
        state.withLockedValue { state in
            if let entry = state.active[key], entry.range.contains(written - 1) {
                state.active[key]?.written = max(entry.written, written)
            }
        }
        try? writeSidecar()
    }

    /// Records what is written: finished ranges plus each connection's progress in its range.
    private func writeSidecar() throws(BatchFetchError) {
        sidecarWrites.lock()
        defer { sidecarWrites.unlock() }
        let sidecar = state.withLockedValue { state -> Sidecar in
            var done = state.planner.done
            for entry in state.active.values { done.insert(entry.range.lowerBound..<entry.written) }
            var sidecar = setup.start.sidecar
            sidecar.rangesDone = done
            return sidecar
        }
        try setup.files.writeSidecar(sidecar)
    }
}

/// The planner's verdict on a range's response head, and the status it was given for.
private struct RangeHead: HeadDecision {
    var verdict: SegmentPlanner.HeadVerdict
    var status: Int

    var acceptsBody: Bool { verdict == .accept }
}

/// Opens once; waiters resume then (or at once after).
private final class Gate: Sendable {
    private let state = NIOLockedValueBox((isOpen: false, waiters: [CheckedContinuation<Void, Never>]()))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLockedValue { state in
            defer { state.waiters = [] }
            state.isOpen = true
            return state.waiters
        }
        for waiter in waiting { waiter.resume() }
    }
}
