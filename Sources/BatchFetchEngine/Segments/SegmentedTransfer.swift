import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Performs a segmented download (Docs/Contracts.md §3, Docs/Mirrors.md): several connections —
/// on one mirror, or dealt over every mirror (`sources: all`) — fetch ranges a
/// ``SegmentPlanner`` hands out and write them at their offsets into one preallocated `.part`,
/// each through its own ``FileSink``; an ``OrderedHasher`` follows the written (and, with piece
/// hashes, verified) prefix. It decides nothing itself: it asks the planner, then cuts a range
/// short for a steal, cancels a hedge's loser, hashes a finished piece. The sidecar lists the
/// written ranges (and with several mirrors which mirror wrote them) after every write (1 MiB),
/// so a SIGKILL loses at most a write per connection, and a rerun resumes each gap.
final class SegmentedTransfer: Sendable {
    enum Outcome {
        /// Every byte is written; the digests cover the whole part.
        case complete(digests: [String: String])
        /// Segmenting ended early with the part written up to `prefix` (and perhaps beyond).
        case stopped(prefix: Int64, BatchFetchError)
    }

    /// One mirror the connections may use.
    struct Mirror: Sendable {
        /// The job's mirror index.
        var index: Int
        /// Where its ranges are asked for: the mirror, or where the job's first request to it
        /// was redirected.
        var url: URL
        /// Redirects already followed to reach `url`.
        var redirects = 0
        /// The URL as it may be printed, for attempt records.
        var displayURL: String
        /// Where its `per_host` slots are counted.
        var host: String
    }

    /// What the transfer needs from its job.
    struct Setup {
        var start: DownloadStateMachine.SegmentStart
        var connections: Int
        /// The first mirror is the one the transfer continues (its validator is the sidecar's);
        /// the others only with `sources: all` and proof of one content.
        var mirrors: [Mirror]
        /// `per_host` of the run: connections dealt to one host at most.
        var perHost: Int
        var files: PartialFiles
        var algorithms: DigestAlgorithms
        var context: JobDownloader.Context
        /// The job's transport (the run's, or one made for its TLS settings).
        var transport: any HTTPTransport
        var progress: JobProgress
        var idleTimeout: Duration
        var deadline: ContinuousClock.Instant?
        var planner: SegmentPlanner.Configuration
        /// The request for one range from one mirror at a URL (method, headers, Range and If-Range).
        var request: @Sendable (Range<Int64>, _ mirror: Int, URL, _ ifRange: String?) -> TransportRequest
        /// The job's redirect policy: a mirror whose ranges are redirected is followed there.
        var redirect: RedirectPolicy
        /// The mirror the planner's ``SegmentPlanner/Configuration/hedgeMirror`` names.
        var hedgeMirror: Mirror?
        /// Told each time the written prefix grows, as the hasher is: an unpacking that reads
        /// the archive in order while it arrives (``ArchiveStream``).
        var followPrefix: (@Sendable (Int64) -> Void)?
        /// How often a connection with nothing to do looks again (a steal, a hedge, a bad piece).
        var idleLook: Duration = .milliseconds(100)

        /// The mirrors connections are dealt to, and the one that only hedges.
        var everyMirror: [Mirror] { mirrors + (hedgeMirror.map { [$0] } ?? []) }
    }

    /// What the connections share, changed by each of them.
    private struct State {
        var planner: SegmentPlanner
        /// Each connection's sink and the handler of its request in flight: a steal cuts the
        /// sink short, a hedge's loser is ended through its handler.
        var sinks: [Int: FileSink] = [:]
        var handlers: [Int: AttemptHandler<RangeHead>] = [:]
        /// The range requests that failed, and bad pieces (the planner counts failures for the
        /// retry policy).
        var attempts = AttemptLog()
        var received: Int64 = 0
        /// Made once the part is ready, before any connection starts.
        var hasher: OrderedHasher?
        /// A piece-check reader of the part.
        var reader: Int32 = -1
        /// Where each mirror's ranges are asked for now, and the redirects followed to get there.
        var routes: [Int: (url: URL, redirects: Int)] = [:]
        /// Connections dealt at the start still running.
        var running = 0
    }

    let setup: Setup
    private let state: NIOLockedValueBox<State>
    /// Serializes sidecar writes, which come from every connection's sink queue.
    private let sidecarWrites = NIOLock()
    /// The other connections start once the first range's head proved the content: when the
    /// file changed, one refused response is in flight instead of one per connection.
    private let firstHead = Gate()
    /// Seconds on the transfer's own clock, for the hedge rule.
    private let started = ContinuousClock.now

    init(_ setup: Setup) {
        self.setup = setup
        var served = (setup.start.sidecar.rangesFrom ?? [:]).reduce(into: [Int: ByteRanges]()) { served, entry in
            if let index = Int(entry.key) { served[index] = entry.value }
        }
        if setup.start.sidecar.rangesFrom == nil, let mirror = setup.start.doneFrom { served[mirror] = setup.start.done }
        var initial = State(planner: SegmentPlanner(configuration: setup.planner, done: setup.start.done, servedBy: served))
        for mirror in setup.everyMirror {
            initial.routes[mirror.index] = (mirror.url, mirror.redirects)
        }
        state = NIOLockedValueBox(initial)
    }

    deinit {
        let reader = state.withLockedValue { $0.reader }
        if reader >= 0 { close(reader) }
    }

    /// The range requests that failed and the bad pieces, as attempt records.
    var attempts: [AttemptRecord] { state.withLockedValue { $0.attempts.records } }
    /// Body bytes received over every connection.
    var received: Int64 { state.withLockedValue { $0.received } }
    /// What the planner ends with: steals, hedges, repaired pieces, mirrors used and dropped.
    var planner: SegmentPlanner { state.withLockedValue { $0.planner } }

    private var hasher: OrderedHasher { state.withLockedValue { $0.hasher! } }

    private var now: Double { (ContinuousClock.now - started).inSeconds }

    func run() async -> Outcome {
        do {
            try preallocate()
            try writeSidecar()
            let hasher = OrderedHasher(descriptor: try setup.files.openPart(), path: setup.files.partPath, algorithms: setup.algorithms)
            let reader = try setup.files.openPart()
            state.withLockedValue {
                $0.hasher = hasher
                $0.reader = reader
            }
        } catch {
            return .stopped(prefix: setup.start.done.prefix, error)
        }
        // Pieces a resumed part already holds are checked before anything is believed.
        await checkPieces(state.withLockedValue { $0.planner.piecesToCheck() })
        prefixGrew()
        let dealt = SegmentPlanner.deal(connections: setup.connections, hosts: setup.mirrors.map(\.host), perHost: setup.perHost)
        state.withLockedValue { $0.running = dealt.count }
        await withTaskGroup(of: Void.self) { group in
            for (key, mirror) in dealt.enumerated() {
                group.addTask {
                    if key > 0 { await self.firstHead.wait() }
                    await self.connection(key, mirror: self.setup.mirrors[mirror])
                    self.state.withLockedValue { $0.running -= 1 }
                }
            }
            if setup.planner.hedge != nil {
                group.addTask { await self.hedgeWhenAllAreBusy(hosts: dealt.map { self.setup.mirrors[$0].host }) }
            }
        }
        // The sinks call back into the transfer: let them go, and the transfer with them.
        state.withLockedValue {
            $0.sinks = [:]
            $0.handlers = [:]
        }
        let (complete, prefix, reason) = state.withLockedValue { ($0.planner.isComplete, $0.planner.hashablePrefix, $0.planner.stopReason) }
        guard complete else {
            try? writeSidecar()
            return .stopped(prefix: prefix, reason ?? BatchFetchError(.connection, "segments ended early"))
        }
        switch await hasher.finish(total: setup.start.total) {
        case .success(let digests): return .complete(digests: digests)
        case .failure(let failure): return .stopped(prefix: prefix, failure)
        }
    }

    /// While the connections run, looks every ``Setup/idleLook`` for a lagging range that no idle
    /// connection can hedge (all are busy) and opens one more connection for it on the mirror
    /// the planner names, where `per_host` leaves that host a slot. The extra connection then
    /// works like the others until nothing is left; one at a time.
    private func hedgeWhenAllAreBusy(hosts: [String]) async {
        let extraKey = setup.connections
        while state.withLockedValue({ $0.running > 0 }) {
            guard await setup.context.interruption.sleep(setup.idleLook) else { return }
            let now = now
            guard let index = state.withLockedValue({ $0.planner.extraHedge(connections: setup.connections, now: now) }),
                  let mirror = setup.everyMirror.first(where: { $0.index == index }),
                  hosts.filter({ $0 == mirror.host }).count < setup.perHost else { continue }
            await connection(extraKey, mirror: mirror)
        }
    }

    /// What a connection does after asking the planner.
    private enum Step {
        /// Fetch this range from this mirror (the connection's own, or the one a hedge asks).
        case fetch(Range<Int64>, Mirror)
        case wait
        case finish
    }

    /// One connection on `mirror`: takes ranges until none are left, its mirror is dropped or
    /// segmenting stops.
    private func connection(_ key: Int, mirror: Mirror) async {
        do throws(BatchFetchError) {
            let sink = try makeSink(key)
            state.withLockedValue { $0.sinks[key] = sink }
        } catch {
            stop(error)
            return
        }
        while true {
            switch next(key, mirror: mirror) {
            case .finish:
                return
            case .wait:
                guard await setup.context.interruption.sleep(setup.idleLook) else {
                    stop(BatchFetchError(.interrupted, "the run was interrupted"))
                    return
                }
            case .fetch(let range, let from):
                switch await fetch(range, key: key, mirror: from) {
                case .accept:
                    continue
                case .leave where from.index != mirror.index:
                    // A hedge's mirror was dropped; the connection's own mirror serves on.
                    continue
                case .retry(_, let delay):
                    // The retry policy never returns a wait past the deadline.
                    guard await setup.context.interruption.sleep(.seconds(delay.draw())) else {
                        stop(BatchFetchError(.interrupted, "the run was interrupted"))
                        return
                    }
                case .leave, .stop:
                    return
                }
            }
        }
    }

    /// Asks the planner for the connection's next range and carries out a steal it proposes:
    /// the victim's sink is cut at the split (refused when bytes past it already arrived), and
    /// only then is the rest claimed.
    private func next(_ key: Int, mirror: Mirror) -> Step {
        let now = now
        return state.withLockedValue { state -> Step in
            switch state.planner.next(for: key, mirror: mirror.index, now: now) {
            case .range(let range):
                return .fetch(range, mirror)
            case .hedge(_, let range, let hedging):
                return .fetch(range, hedging == mirror.index ? mirror : setup.hedgeMirror ?? mirror)
            case .steal(let victim, let at):
                guard let sink = state.sinks[victim], sink.cut(at: at),
                      let range = state.planner.stole(for: key, mirror: mirror.index, victim: victim, at: at, now: now) else { return .wait }
                // Cut where its body already is: nothing more will reach the sink to end it.
                if sink.reachedCutEnd { state.handlers[victim]?.interrupt() }
                return .fetch(range, mirror)
            case .wait:
                return .wait
            case .finished:
                return .finish
            }
        }
    }

    private func makeSink(_ key: Int) throws(BatchFetchError) -> FileSink {
        // Each connection holds its share of the job's cap, written in halves of it at most.
        let share = TransferPolicy.connectionShare(memoryCap: setup.context.memoryCap, connections: setup.connections,
                                                   backpressure: setup.transport.hasBackpressure)
        let files = setup.files
        return FileSink(descriptor: try files.openPart(), partPath: files.partPath, algorithms: [],
                        writeSize: min(setup.context.writeSize, Int(setup.planner.pieceSize) / 4, share / 2),
                        memoryCap: share, hashes: false,
                        onWrite: { [self] written in progressed(key, to: written) },
                        writeRate: setup.context.simulatedDiskRate.map { $0 / Int64(setup.connections) })
    }

    /// Fetches one range from `mirror` and returns the planner's verdict on how it went.
    private func fetch(_ range: Range<Int64>, key: Int, mirror: Mirror) async -> SegmentPlanner.Verdict {
        // After a refusal the others start only once the stop is recorded, and then claim nothing.
        defer { firstHead.open() }
        let (judge, ifRange, sink, route) = state.withLockedValue {
            ($0.planner, $0.planner.validators[mirror.index], $0.sinks[key]!, $0.routes[mirror.index] ?? (mirror.url, mirror.redirects))
        }
        let request = setup.request(range, mirror.index, route.url, ifRange)
        let handler = AttemptHandler<RangeHead>(
            // Never shed for memory: without backpressure a range fits its sink (see
            // TransferPolicy.pieceSize); with it, the sink holds the reads. Cut short by a
            // steal or ended as a hedge's loser, it is interrupted.
            sink: sink, finishWithin: setup.planner.pieceSize, progress: setup.progress,
            decide: { [state, firstHead] head in
                let verdict = judge.judge(head, for: range, mirror: mirror.index)
                if verdict == .accept {
                    state.withLockedValue { $0.planner.learn(mirror.index, from: head) }
                    sink.beginRange(at: range.lowerBound, end: range.upperBound)
                    firstHead.open()
                }
                return RangeHead(verdict: verdict, status: head.status)
            })
        state.withLockedValue { $0.handlers[key] = handler }
        let outcome = await Exchange.perform(
            request, handler: handler, transport: setup.transport, hosts: setup.context.hosts,
            interruption: setup.context.interruption, idleTimeout: setup.idleTimeout, deadline: setup.deadline,
            proceed: { [state] in state.withLockedValue { $0.planner.stopReason == nil } })
        await sink.drain()
        let head = outcome?.decision
        let written = head?.verdict == .accept ? sink.flushedOffset : range.lowerBound
        let (released, beaten, pieces) = state.withLockedValue { state in
            state.handlers[key] = nil
            state.received += outcome?.received ?? 0
            let released = state.planner.release(key, writtenThrough: written)
            return (released, released?.beat.flatMap { state.handlers[$0] }, state.planner.piecesToCheck())
        }
        // The rival of a hedge this one won: its bytes are no longer wanted.
        beaten?.interrupt()
        await checkPieces(pieces)
        prefixGrew()
        try? writeSidecar()

        // Not started: segmenting had stopped, or the run was interrupted.
        guard let outcome else { return stop(state.withLockedValue { $0.planner.stopReason } ?? BatchFetchError(.interrupted, "the run was interrupted")) }
        guard let released, !released.superseded else { return .accept }
        var headVerdict = head?.verdict
        if case .redirect(let location)? = headVerdict, let status = head?.status {
            switch setup.redirect.decide(status: status, location: location, from: route.url, followed: route.redirects) {
            case .follow(let target):
                // The range went back to the pool; this mirror's next ones go to the target.
                state.withLockedValue { $0.routes[mirror.index] = (target, route.redirects + 1) }
                return .accept
            case .refuse(let failure):
                headVerdict = .stop(failure)
            }
        }
        let end = SegmentPlanner.RangeEnd(
            head: headVerdict, status: head?.status, written: written,
            failure: outcome.failure, shed: outcome.overflow, diskFailure: sink.writeFailure,
            pastDeadline: setup.deadline.map { .now >= $0 } ?? false, remaining: remaining)
        let (verdict, recorded) = state.withLockedValue { $0.planner.ended(released.range, end, mirror: mirror.index) }
        if let recorded { record(mirror, status: head?.status, recorded) }
        return verdict
    }

    /// Hashes each piece the planner hands over and tells it which matched; a bad one goes in
    /// the attempt log with the mirror that served it and its bytes.
    private func checkPieces(_ indices: [Int]) async {
        guard !indices.isEmpty, let pieces = setup.planner.pieces else { return }
        let (reader, total) = (state.withLockedValue { $0.reader }, setup.start.total)
        for index in indices {
            let bytes = pieces.range(of: index, total: total)
            let sha256 = await withTaskExecutorPreference(globalConcurrentExecutor) {
                try? Digester.sha256(ofDescriptor: reader, in: bytes)
            }
            let matches = sha256 == pieces.sha256[index]
            guard let bad = state.withLockedValue({ $0.planner.pieceChecked(index, matches: matches) }) else { continue }
            let failure = SegmentPlanner.pieceFailure(AttemptRecord.Piece(index: index, bytes: bytes), fatal: bad.fatal != nil)
            for mirror in bad.mirrors.isEmpty ? [setup.mirrors[0].index] : bad.mirrors {
                let served = setup.everyMirror.first { $0.index == mirror } ?? setup.mirrors[0]
                state.withLockedValue {
                    $0.attempts.record(mirror: served.index, url: served.displayURL, status: nil, failure: failure,
                                       piece: AttemptRecord.Piece(index: index, bytes: bytes))
                }
            }
        }
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

    private func record(_ mirror: Mirror, status: Int?, _ failure: BatchFetchError) {
        state.withLockedValue {
            $0.attempts.record(mirror: mirror.index, url: mirror.displayURL, status: status, failure: failure)
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

    /// The hasher and whoever follows the prefix read bytes up to the planner's hashable prefix:
    /// written and, with piece hashes, verified.
    private func prefixGrew() {
        let prefix = state.withLockedValue { $0.planner.hashablePrefix }
        hasher.advance(to: prefix)
        setup.followPrefix?(prefix)
    }

    /// A connection's sink wrote through `written` (called on the sink's queue).
    private func progressed(_ key: Int, to written: Int64) {
        let now = now
        state.withLockedValue { $0.planner.progress(key, writtenThrough: written, now: now) }
        try? writeSidecar()
    }

    /// Records what is written: finished ranges plus each connection's progress in its range,
    /// and with several mirrors which wrote what.
    private func writeSidecar() throws(BatchFetchError) {
        sidecarWrites.lock()
        defer { sidecarWrites.unlock() }
        let sidecar = state.withLockedValue { state -> Sidecar in
            var done = state.planner.done
            var served = state.planner.servedBy
            for claim in state.planner.inFlight.values where !claim.superseded && claim.written > claim.range.lowerBound {
                done.insert(claim.range.lowerBound..<claim.written)
                served[claim.mirror, default: ByteRanges()].insert(claim.range.lowerBound..<claim.written)
            }
            var sidecar = setup.start.sidecar
            sidecar.rangesDone = done
            if setup.mirrors.count > 1 {
                sidecar.rangesFrom = Dictionary(uniqueKeysWithValues: served.filter { !$0.value.ranges.isEmpty }.map { (String($0.key), $0.value) })
            }
            return sidecar
        }
        try setup.files.writeSidecar(sidecar)
    }
}

/// The planner's verdict on a range's response head, and the status it was given for.
struct RangeHead: HeadDecision {
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
