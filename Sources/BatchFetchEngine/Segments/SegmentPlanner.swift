import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// The decisions of a segmented download, as a pure state machine: which byte range each
/// connection fetches next — from which mirror, stolen from whom, hedging whom — which responses
/// to a range request are acceptable, which piece is bad and who served it, when a failed range
/// is retried, when a mirror is dropped and when segmenting is given up. ``SegmentedTransfer``
/// performs the I/O (Docs/Mirrors.md).
///
/// Work is handed out in pieces of at most ``Configuration/pieceSize`` bytes ending on multiples
/// of it, always the lowest range nobody has written or claimed, so the written prefix — which
/// the sha256 follows — grows steadily instead of jumping at the end; a range that ends early goes back to the pool from its
/// last written byte. When no range is left unclaimed, a connection takes the back half of the
/// largest range still unwritten (work stealing, ``next(for:mirror:now:)``), and when one slow
/// range is all that is left, an idle connection asks for its rest too (a hedge): the first to
/// finish keeps it. Giving up (``stop(_:)``) is never fatal: the owner continues from the written
/// prefix with a single stream, which also handles mirror failover.
struct SegmentPlanner: Sendable {
    struct Configuration: Sendable {
        var total: Int64
        var pieceSize: Int64
        /// The validator every range request to the first mirror carries in `If-Range`; a strong
        /// ETag is also compared with each 206's ETag. Other mirrors' are learned from their first
        /// 206 (``learn(_:from:)``), and the first's too when this is empty (a repair of bad
        /// pieces from a mirror other than the one that served the body: the hashes prove it).
        var ifRange: String
        /// The job's retries, backoff and Retry-After cap (counted per mirror).
        var retry: RetryPolicy
        /// The mirrors the connections use (job indices), the first the one the transfer
        /// continues: several only with proof of one content (`sources: all`).
        var mirrors: [Int]
        /// Piece hashes, checked as each piece is written.
        var pieces: PieceHashes?
        /// A range is split only when each half is at least this long.
        var minimumSteal: Int64
        /// Rules of a hedged tail (Docs/Mirrors.md); nil: no hedging.
        var hedge: HedgeRule?
        /// Pieces already found bad once (a body that arrived whole): bad again with no other
        /// mirror to ask, they fail the job.
        var badBefore: [Int]
        /// The job pins its size (which `total` then is): a mirror of another size is always the
        /// odd one. Without it the majority of the mirrors decides.
        var sizePinned: Bool
        /// A mirror that only hedges, while `mirrors` has one live: a `sources: first` job's next
        /// mirror, given with proof of one content (Docs/Mirrors.md). A hedge to the same mirror
        /// otherwise.
        var hedgeMirror: Int?

        init(total: Int64, pieceSize: Int64, ifRange: String, retry: RetryPolicy, mirrors: [Int] = [0],
             pieces: PieceHashes? = nil, minimumSteal: Int64 = 1 << 20, hedge: HedgeRule? = HedgeRule(), badBefore: [Int] = [],
             sizePinned: Bool = false, hedgeMirror: Int? = nil) {
            self.badBefore = badBefore
            self.sizePinned = sizePinned
            self.hedgeMirror = hedgeMirror
            self.total = total
            self.pieceSize = max(1, pieceSize)
            self.ifRange = ifRange
            self.retry = retry
            self.mirrors = mirrors.isEmpty ? [0] : mirrors
            self.pieces = pieces
            self.minimumSteal = max(1, minimumSteal)
            self.hedge = hedge
        }

        /// The mirrors connections are dealt to, and the one that only hedges.
        var everyMirror: [Int] { mirrors + (hedgeMirror.map { [$0] } ?? []) }
    }

    /// When the last range in flight is asked of a second connection.
    struct HedgeRule: Sendable, Equatable {
        /// The range's rate must stay below this share of the median rate…
        var share = 0.25
        /// …over this many seconds (and the range be this old).
        var after = 2.0
        /// The median is over the connections' rates in this window.
        var window = 5.0
    }

    /// What to make of the response head to one range request (``judge(_:for:mirror:now:)``).
    enum HeadVerdict: Sendable, Equatable {
        case accept
        /// A response worth retrying (408, 429, 5xx), with the server's `Retry-After` in seconds:
        /// pass it to ``failed(_:mirror:retryAfter:remaining:)``, which decides.
        case retryable(BatchFetchError, retryAfter: Double?)
        /// This mirror cannot serve the range (ranges not honoured, content changed, a hard
        /// error): segmenting stops, or with other mirrors left the mirror is dropped.
        case stop(BatchFetchError)
        /// This mirror (not the first) serves another size: it is the odd one and dropped, unless
        /// a majority of the mirrors serve that size and no size is pinned (``ended(_:_:mirror:)``).
        case otherSize(Int64, BatchFetchError)
        /// A redirect: the owner asks the job's redirect policy, and follows it for this mirror's
        /// ranges from then on (a mirror that sends its files to a CDN) or ends the range with
        /// the policy's refusal as `.stop`.
        case redirect(location: String?)
    }

    /// How one range request ended, for the connection that made it.
    enum Verdict: Sendable, Equatable {
        case accept
        /// A transient failure: retry this range after the delay.
        case retry(BatchFetchError, RetryDelay)
        /// This connection's mirror is dropped for the job; the others go on without it.
        case leave(BatchFetchError)
        /// Segmenting cannot go on (ranges not honoured, content changed, a hard error, or
        /// retries used up).
        case stop(BatchFetchError)
    }

    /// What a connection does next (``next(for:mirror:now:)``).
    enum Assignment: Sendable, Equatable {
        /// Fetch this range (claimed).
        case range(Range<Int64>)
        /// Take `victim`'s range from `at` on: stop the victim's transfer there, then
        /// ``stole(for:mirror:victim:at:)`` claims it.
        case steal(victim: Int, at: Int64)
        /// Fetch the rest of `victim`'s slow range as well (claimed), from `mirror`; the first to
        /// finish keeps it.
        case hedge(victim: Int, range: Range<Int64>, mirror: Int)
        /// Nothing to take now; ranges are still in flight (one may need a hedge later).
        case wait
        /// Nothing is left for this connection.
        case finished
    }

    /// A range a connection holds.
    struct Claim: Sendable, Equatable {
        var range: Range<Int64>
        var mirror: Int
        /// Where the range is written through.
        var written: Int64
        /// When it was claimed (seconds, the caller's clock).
        var since: Double
        /// The connection whose range this one hedges, or that hedges this one.
        var rival: Int?
        /// The rival finished the range first: this one's bytes are no longer wanted.
        var superseded = false
    }

    /// What releasing a range leaves to do.
    struct Released: Sendable, Equatable {
        /// The range as it ended (a steal may have shortened it).
        var range: Range<Int64>
        var mirror: Int
        /// Its rival finished first: the transfer was cut off, which is no failure.
        var superseded: Bool
        /// A hedge rival still running, whose transfer is to be stopped: this one finished first.
        var beat: Int?
    }

    /// A bad piece (``pieceChecked(_:matches:)``).
    struct BadPiece: Sendable, Equatable {
        var index: Int
        var bytes: Range<Int64>
        /// The mirrors whose bytes were in it.
        var mirrors: [Int]
        /// The job fails: the piece was bad twice with no other mirror to ask.
        var fatal: BatchFetchError?
    }

    let configuration: Configuration
    /// Bytes written and complete (and, with piece hashes, not found bad).
    private(set) var done: ByteRanges
    /// Ranges in flight, by connection.
    private(set) var inFlight: [Int: Claim] = [:]
    /// Why segmenting ended early, once it has.
    private(set) var stopReason: BatchFetchError?
    /// Each mirror's failed range requests, which its retry policy weighs.
    private var logs: [Int: AttemptLog] = [:]
    /// Each mirror's validator for `If-Range`.
    private(set) var validators: [Int: String]
    /// The size each mirror that answered a range serves (the first serves `total`).
    private var sizes: [Int: Int64]
    /// Mirrors that get no more ranges, and why.
    private(set) var dropped: [Int: BatchFetchError] = [:]
    /// Which mirror wrote which bytes (this run's and, resumed, the sidecar's).
    private(set) var servedBy: [Int: ByteRanges]
    /// Pieces whose hash matched; pieces handed out for checking.
    private(set) var verifiedPieces = Set<Int>()
    private var checking = Set<Int>()
    /// How often each piece was found bad.
    private var badCounts: [Int: Int] = [:]
    private(set) var piecesRepaired = 0
    private(set) var stolen = 0
    private(set) var hedged = 0
    /// Each connection's bytes written over time, for the hedge rule: (time, total written).
    private var samples: [Int: [(at: Double, bytes: Int64)]] = [:]

    init(configuration: Configuration, done: ByteRanges = ByteRanges(), servedBy: [Int: ByteRanges] = [:]) {
        self.configuration = configuration
        self.done = done.clipped(to: configuration.total)
        self.servedBy = servedBy
        validators = configuration.ifRange.isEmpty ? [:] : [configuration.mirrors[0]: configuration.ifRange]
        sizes = [configuration.mirrors[0]: configuration.total]
        badCounts = Dictionary(configuration.badBefore.map { ($0, 1) }, uniquingKeysWith: +)
    }

    /// Every byte is written (and every piece verified).
    var isComplete: Bool {
        done.prefix >= configuration.total
            && (configuration.pieces.map { verifiedPieces.count == $0.count(for: configuration.total) } ?? true)
    }

    /// How far the part may be hashed in order: the written prefix, and with piece hashes only
    /// through the pieces verified from the start.
    var hashablePrefix: Int64 {
        guard let pieces = configuration.pieces else { return done.prefix }
        var index = 0
        while verifiedPieces.contains(index) { index += 1 }
        return min(done.prefix, min(configuration.total, Int64(index) * pieces.length))
    }

    /// Mirrors still given ranges.
    var liveMirrors: [Int] { configuration.mirrors.filter { dropped[$0] == nil } }

    /// The mirror that wrote the most bytes (the job's `url` in the report).
    var busiestMirror: Int {
        configuration.everyMirror.max { (servedBy[$0]?.count ?? 0) < (servedBy[$1]?.count ?? 0) } ?? configuration.mirrors[0]
    }

    /// Deals `connections` over `hosts` (one per mirror, in order) round-robin, never more than
    /// `perHost` to one host: the mirror of each connection. Fewer when the hosts run out.
    static func deal(connections: Int, hosts: [String], perHost: Int) -> [Int] {
        var perHostUsed: [String: Int] = [:]
        var dealt: [Int] = []
        var progress = true
        while dealt.count < connections && progress {
            progress = false
            for (mirror, host) in hosts.enumerated() where dealt.count < connections && perHostUsed[host, default: 0] < perHost {
                perHostUsed[host, default: 0] += 1
                dealt.append(mirror)
                progress = true
            }
        }
        return dealt
    }

    // MARK: - Handing out work

    /// The lowest range nobody holds, claimed for connection `key` on `mirror`; nil when none is
    /// left unclaimed (or segmenting stopped, or the mirror was dropped).
    mutating func claim(for key: Int, mirror: Int? = nil, now: Double = 0) -> Range<Int64>? {
        let mirror = mirror ?? configuration.mirrors[0]
        guard stopReason == nil, dropped[mirror] == nil, inFlight[key] == nil,
              let gap = done.union(claimed).firstGap(before: configuration.total) else { return nil }
        // Ends on the grid of whole pieces from byte 0, whatever the first range was: ranges then
        // line up with piece hashes of that length or a divisor, and one piece's bytes come
        // from one mirror (a piece served by two is blamed on both).
        let size = configuration.pieceSize
        let range = gap.lowerBound..<min(gap.upperBound, (gap.lowerBound / size + 1) * size)
        inFlight[key] = Claim(range: range, mirror: mirror, written: range.lowerBound, since: now)
        return range
    }

    /// What connection `key`, on `mirror`, does next: the lowest free range; else the back half
    /// of the largest range still unwritten (when each half is worth a request); else, when one
    /// slow range is all that is in flight, its rest as a hedge; else wait or finish.
    mutating func next(for key: Int, mirror: Int, now: Double) -> Assignment {
        guard stopReason == nil, dropped[mirror] == nil else { return .finished }
        if let range = claim(for: key, mirror: mirror, now: now) { return .range(range) }
        let running = inFlight.filter { $0.key != key && !$0.value.superseded }
        // A piece being checked may come back bad, its bytes to fetch again.
        guard !running.isEmpty else { return checking.isEmpty ? .finished : .wait }
        // Steal: the largest unwritten rest of a range nobody hedges.
        if let (victim, claim) = running.filter({ $0.value.rival == nil })
            .max(by: { $0.value.unwritten < $1.value.unwritten || ($0.value.unwritten == $1.value.unwritten && $0.key > $1.key) }),
           claim.unwritten >= 2 * configuration.minimumSteal {
            return .steal(victim: victim, at: claim.range.upperBound - claim.unwritten / 2)
        }
        if let victim = hedgeVictim(for: mirror, running: running, now: now) {
            // What the victim wrote is kept now; from there on both fetch the same bytes.
            var claim = inFlight[victim]!
            let range = claim.written..<claim.range.upperBound
            keep(claim.range.lowerBound..<claim.written, from: claim.mirror)
            claim.range = range
            claim.rival = key
            inFlight[victim] = claim
            // One mirror live: its rival asked of the hedging mirror when there is one.
            let hedging = liveMirrors.count == 1 ? configuration.hedgeMirror.flatMap { dropped[$0] == nil ? $0 : nil } ?? mirror : mirror
            inFlight[key] = Claim(range: range, mirror: hedging, written: range.lowerBound, since: now, rival: victim)
            hedged += 1
            return .hedge(victim: victim, range: range, mirror: hedging)
        }
        return .wait
    }

    /// The steal ``next(for:mirror:now:)`` proposed, made once the victim's transfer was told to
    /// end at `at`: the victim keeps the bytes below it, `key` claims the rest. Nil when the
    /// victim's range changed meanwhile (then nothing is taken).
    mutating func stole(for key: Int, mirror: Int, victim: Int, at: Int64, now: Double) -> Range<Int64>? {
        guard stopReason == nil, inFlight[key] == nil, var claim = inFlight[victim], claim.rival == nil,
              claim.written < at, at < claim.range.upperBound else { return nil }
        let stolen = at..<claim.range.upperBound
        claim.range = claim.range.lowerBound..<at
        inFlight[victim] = claim
        inFlight[key] = Claim(range: stolen, mirror: mirror, written: at, since: now)
        self.stolen += 1
        return stolen
    }

    /// The mirror a new connection should open to and hedge a lagging range on, when every one
    /// of the transfer's `connections` is busy with a range (none is idle to hedge it: a mirror
    /// stalled in its last ranges stalls them all): the hedging mirror, else a live mirror other
    /// than the lagging range's, else its own. Nil when a connection is idle, nothing lags, or
    /// nothing is left to hedge. The owner opens it where `per_host` allows (Docs/Mirrors.md).
    func extraHedge(connections: Int, now: Double) -> Int? {
        guard stopReason == nil else { return nil }
        let running = inFlight.filter { !$0.value.superseded }
        guard running.count >= connections else { return nil }
        let hedging = configuration.hedgeMirror.flatMap { dropped[$0] == nil ? [$0] : nil } ?? []
        return (hedging + liveMirrors).first { hedgeVictim(for: $0, running: running, now: now) != nil }
    }

    /// The slowest range in flight — asked when nothing is left to claim or steal — whose rate
    /// over the rule's last seconds fell below its share of the median rate the job's
    /// connections had (each over the window ending at its last write: a connection that
    /// finished its work keeps the rate it had). With several mirrors live only a connection on
    /// another mirror hedges it (the transfer has several only with proof of one content); with
    /// one, a connection to the same mirror does.
    private func hedgeVictim(for mirror: Int, running: [Int: Claim], now: Double) -> Int? {
        guard let rule = configuration.hedge else { return nil }
        let rates = samples.keys.compactMap { key in
            samples[key]?.last.map { rate(of: key, over: rule.window, endingAt: min(now, $0.at)) }
        }.sorted()
        guard !rates.isEmpty else { return nil }
        let median = rates.count % 2 == 1 ? rates[rates.count / 2] : (rates[rates.count / 2 - 1] + rates[rates.count / 2]) / 2
        // With other mirrors live, a lagging range is asked of another one: its own mirror is the
        // likelier cause.
        let others = liveMirrors.count > 1
        let slow = running.compactMap { key, claim -> (key: Int, rate: Double)? in
            guard claim.rival == nil, claim.written < claim.range.upperBound, now - claim.since >= rule.after,
                  !(others && claim.mirror == mirror) else { return nil }
            let recent = rate(of: key, over: rule.after, endingAt: now)
            return median > 0 && recent < rule.share * median ? (key, recent) : nil
        }
        return slow.min { ($0.rate, $0.key) < ($1.rate, $1.key) }?.key
    }

    /// Bytes per second connection `key` wrote over the `window` seconds before `end`.
    private func rate(of key: Int, over window: Double, endingAt end: Double) -> Double {
        guard let history = samples[key], let first = history.first else { return 0 }
        let atEnd = history.last { $0.at <= end }?.bytes ?? first.bytes
        let atStart = history.last { $0.at <= end - window }?.bytes ?? first.bytes
        return Double(atEnd - atStart) / window
    }

    /// Ranges held by connections.
    private var claimed: ByteRanges {
        ByteRanges(inFlight.values.filter { !$0.superseded }.map(\.range))
    }

    // MARK: - Progress and results

    /// Connection `key` wrote its range through `written` (and `bytes` in all since it began).
    mutating func progress(_ key: Int, writtenThrough written: Int64, now: Double) {
        guard var claim = inFlight[key], written > claim.range.lowerBound, written <= claim.range.upperBound else { return }
        let grew = max(0, written - claim.written)
        claim.written = max(claim.written, written)
        inFlight[key] = claim
        var history = samples[key] ?? [(now, 0)]
        history.append((now, (history.last?.bytes ?? 0) + grew))
        // Only the window matters, and the last sample before it, the baseline its bytes are
        // counted from: a range that arrived in one burst (URLSession delivers a short range at
        // once on a loaded machine) left one sample in the window, and without the baseline the
        // connection's rate came out 0 — and with it the median, so no range was ever hedged.
        if let baseline = history.lastIndex(where: { $0.at < now - (configuration.hedge?.window ?? 0) - 1 }) {
            history.removeFirst(baseline)
        }
        samples[key] = history
    }

    /// Connection `key` gives its range back with its bytes up to `written` on disk; the rest
    /// returns to the pool (unless a rival still fetches it).
    mutating func release(_ key: Int, writtenThrough written: Int64) -> Released? {
        guard let claim = inFlight.removeValue(forKey: key) else { return nil }
        var released = Released(range: claim.range, mirror: claim.mirror, superseded: claim.superseded)
        let kept = claim.range.lowerBound..<min(max(written, claim.range.lowerBound), claim.range.upperBound)
        if !claim.superseded { keep(kept, from: claim.mirror) }
        // The rival may have won and moved on to hedge another range: then it is not this one's.
        if let rival = claim.rival, inFlight[rival]?.rival == key {
            if written >= claim.range.upperBound && !claim.superseded {
                // This one finished first: the rival's bytes are no longer wanted.
                inFlight[rival]?.superseded = true
                released.beat = rival
            } else {
                // This one failed or lost: the rival carries on alone.
                inFlight[rival]?.rival = nil
            }
        }
        return released
    }

    /// Judges the response head to a request for `range` from `mirror`.
    func judge(_ head: TransportResponseHead, for range: Range<Int64>, mirror: Int? = nil, now: Date = Date()) -> HeadVerdict {
        let mirror = mirror ?? configuration.mirrors[0]
        switch head.status {
        case 206:
            let answered = ResponseHeaders.contentRange(head.header("content-range"))
            if let answered, answered.total != configuration.total, let total = answered.total, mirror != configuration.mirrors[0] {
                return .otherSize(total, BatchFetchError(
                    .sizeMismatch, "this mirror serves \(total) bytes where the others serve \(configuration.total)"))
            }
            guard let answered, answered.first == range.lowerBound, answered.last == range.upperBound - 1,
                  answered.total == configuration.total else {
                return .stop(BatchFetchError(.rangeNotHonoured,
                    "206 with Content-Range '\(head.header("content-range") ?? "none")' for bytes \(range.lowerBound)-\(range.upperBound - 1)/\(configuration.total)"))
            }
            if let validator = validators[mirror],
               let mismatch = ResponseHeaders.rangeMismatch(head, ifRange: validator, recordedTotal: configuration.total) {
                return .stop(BatchFetchError(.remoteChanged, mismatch))
            }
            return .accept
        case 200:
            // Every range request here carries If-Range, and the server honoured ranges before:
            // the file changed, or the server stopped honouring ranges. Either way the written
            // ranges cannot be continued; the job starts over (a 200 whole body, or new segments).
            return .stop(BatchFetchError(.remoteChanged,
                "200 to a range request with If-Range: the file changed or the server ignores ranges now"))
        default:
            switch AttemptVerdict(status: head.status, retryAfter: head.header("retry-after"),
                                  subject: "for bytes \(range.lowerBound)-\(range.upperBound - 1)", now: now) {
            case .retry(let failure, let retryAfter): return .retryable(failure, retryAfter: retryAfter)
            case .redirect: return .redirect(location: head.header("location"))
            case let verdict: return .stop(verdict.failure ?? BatchFetchError(.httpStatus, "HTTP \(head.status)"))
            }
        }
    }

    /// A mirror's first accepted 206 gives its validator for the ranges that follow.
    mutating func learn(_ mirror: Int, from head: TransportResponseHead) {
        sizes[mirror] = configuration.total
        guard validators[mirror] == nil else { return }
        let etag = head.header("etag").flatMap { $0.hasPrefix("W/") ? nil : $0 }
        if let validator = etag ?? head.header("last-modified") { validators[mirror] = validator }
    }

    /// How a range request ended, as its connection saw it once the sink drained.
    struct RangeEnd: Sendable, Equatable {
        /// The verdict on the head and its status; nil when no head arrived.
        var head: HeadVerdict?
        var status: Int?
        /// Where the range's bytes are written through.
        var written: Int64
        /// How the transfer ended (``AttemptState/end(_:expired:tooLong:writeFailed:)``).
        var failure: TransportFailure?
        /// The transfer was stopped for a full sink, a steal or a hedge that won: its unwritten
        /// rest went back to the pool or to another connection, which is no failure.
        var shed = false
        /// A write to the part failed: not the server's fault, no retry.
        var diskFailure: BatchFetchError?
        /// The job's deadline has passed.
        var pastDeadline = false
        /// Seconds left before the deadline, for the retry policy.
        var remaining: Double?
    }

    /// What the end of a request for `range` from `mirror` means: accept it, retry it, drop the
    /// mirror, or stop segmenting (which also stops the other connections from claiming more).
    /// `recorded` is the failure to put in the attempt log, when there is one. Call after
    /// ``release(_:writtenThrough:)``, with the range it returned.
    mutating func ended(_ range: Range<Int64>, _ end: RangeEnd, mirror: Int? = nil) -> (verdict: Verdict, recorded: BatchFetchError?) {
        let mirror = mirror ?? configuration.mirrors[0]
        if let failure = end.diskFailure { return (stopping(failure), nil) }
        if end.pastDeadline { return (stopping(BatchFetchError(.deadlineExceeded, "job deadline exceeded")), nil) }
        switch end.head {
        case .stop(let failure)?:
            return (leaving(mirror, failure), failure)
        case .otherSize(let total, let failure)?:
            return (outvoting(mirror, serving: total, failure), failure)
        case .redirect?:
            // Followed by the owner before the range ends here; one left is not followed.
            let failure = BatchFetchError(.httpStatus, "HTTP \(end.status ?? 0) redirect not followed")
            return (leaving(mirror, failure), failure)
        case .retryable(let failure, let retryAfter)?:
            return (failed(failure, mirror: mirror, retryAfter: retryAfter, remaining: end.remaining), failure)
        case .accept?:
            if end.shed || end.written >= range.upperBound { return (.accept, nil) }
        case nil:
            break
        }
        guard let transportFailure = end.failure, transportFailure != .overloaded else {
            let failure = BatchFetchError(
                .connection, "connection closed at \(end.written) of bytes \(range.lowerBound)-\(range.upperBound - 1)")
            return (failed(failure, mirror: mirror, remaining: end.remaining), failure)
        }
        switch AttemptVerdict(transportFailure, subject: "for bytes \(end.written)-\(range.upperBound - 1)") {
        case .retry(let failure, let retryAfter):
            return (failed(failure, mirror: mirror, retryAfter: retryAfter, remaining: end.remaining), failure)
        case .interrupted(let failure):
            // Cancelled by an interrupt, or by a stop another connection recorded.
            return (stopping(stopReason ?? failure), nil)
        case let verdict:
            return (leaving(mirror, verdict.failure!), nil)
        }
    }

    /// Stops segmenting with `failure` (the first reason stays) and says so.
    private mutating func stopping(_ failure: BatchFetchError) -> Verdict {
        stop(failure)
        return .stop(failure)
    }

    /// `mirror` cannot serve: with other mirrors live it is dropped for the job, else segmenting
    /// stops (the single stream that continues fails over).
    private mutating func leaving(_ mirror: Int, _ failure: BatchFetchError) -> Verdict {
        if dropped[mirror] != nil { return .leave(failure) }
        if mirror == configuration.hedgeMirror {
            // Only hedges are asked of it: they go to the job's own mirror from now on.
            dropped[mirror] = failure
            return .leave(failure)
        }
        guard liveMirrors.count > 1 else { return stopping(failure) }
        drop(mirror, failure)
        return .leave(failure)
    }

    /// `mirror` serves `total` bytes, not the first mirror's size. It is the odd one and
    /// dropped — unless no size is pinned and more mirrors serve `total` than the first's size:
    /// then the first is, and segmenting stops with `size_mismatch` (its bytes are another
    /// file's; the job fails over to the next mirror). Two mirrors that disagree keep the first.
    private mutating func outvoting(_ mirror: Int, serving total: Int64, _ failure: BatchFetchError) -> Verdict {
        sizes[mirror] = total
        let majority = sizes.values.filter { $0 == total }.count
        let first = sizes.values.filter { $0 == configuration.total }.count
        guard !configuration.sizePinned, majority >= 2, majority > first else { return leaving(mirror, failure) }
        let voters = sizes.filter { $0.value == total }.keys.sorted()
        // They were right: none of them is the odd one.
        for voter in voters { dropped[voter] = nil }
        return stopping(BatchFetchError(.sizeMismatch, "mirror \(configuration.mirrors[0]) serves \(configuration.total) bytes "
            + "where mirrors \(voters.map(String.init).joined(separator: ", ")) serve \(total)"))
    }

    /// No more ranges for `mirror`.
    mutating func drop(_ mirror: Int, _ failure: BatchFetchError) {
        if dropped[mirror] == nil { dropped[mirror] = failure }
        if liveMirrors.isEmpty { stop(failure) }
    }

    /// A range request to `mirror` failed in a way worth retrying (connection, timeout, a
    /// retryable status): retry after the job's retry policy's wait, or give up on the mirror
    /// when it says so (retries used up, a Retry-After over `retry_after_max`, a wait past the
    /// deadline `remaining` seconds away) — dropping it while others are live, else stopping.
    mutating func failed(_ failure: BatchFetchError, mirror: Int? = nil, retryAfter: Double? = nil, remaining: Double? = nil) -> Verdict {
        let mirror = mirror ?? configuration.mirrors[0]
        switch logs[mirror, default: AttemptLog()].retry(after: failure, retryAfter: retryAfter, remaining: remaining,
                                                          policy: configuration.retry) {
        case .wait(let delay):
            return .retry(failure, delay)
        case .giveUp(let reason):
            if reason.code == .deadlineExceeded { return stopping(reason) }
            return leaving(mirror, reason)
        }
    }

    /// Ends segmenting: nothing more is handed out.
    mutating func stop(_ failure: BatchFetchError) {
        if stopReason == nil { stopReason = failure }
    }

    // MARK: - Piece hashes

    /// Pieces whose every byte is now written and that are not yet checked: hash each and report
    /// with ``pieceChecked(_:matches:)``.
    mutating func piecesToCheck() -> [Int] {
        guard let pieces = configuration.pieces else { return [] }
        var ready: [Int] = []
        for index in 0..<pieces.count(for: configuration.total) where !verifiedPieces.contains(index) && !checking.contains(index) {
            let bytes = pieces.range(of: index, total: configuration.total)
            if done.firstGap(from: bytes.lowerBound, before: bytes.upperBound) == nil {
                checking.insert(index)
                ready.append(index)
            }
        }
        return ready
    }

    /// Bytes written by `mirror` are done.
    private mutating func keep(_ bytes: Range<Int64>, from mirror: Int) {
        guard !bytes.isEmpty else { return }
        done.insert(bytes)
        for other in servedBy.keys where other != mirror { servedBy[other]?.remove(bytes) }
        servedBy[mirror, default: ByteRanges()].insert(bytes)
    }

    /// The hash of piece `index` matched or not. A bad piece's bytes go back to the pool; the
    /// mirrors that served them get no more ranges while another mirror is live; the same piece
    /// bad twice with no other mirror to ask fails the job.
    mutating func pieceChecked(_ index: Int, matches: Bool) -> BadPiece? {
        checking.remove(index)
        guard let pieces = configuration.pieces else { return nil }
        if matches {
            verifiedPieces.insert(index)
            return nil
        }
        let bytes = pieces.range(of: index, total: configuration.total)
        let culprits = servedBy.keys.sorted().filter { servedBy[$0]?.firstOverlap(with: bytes) != nil }
        done.remove(bytes)
        for mirror in culprits { servedBy[mirror]?.remove(bytes) }
        badCounts[index, default: 0] += 1
        piecesRepaired += 1
        var bad = BadPiece(index: index, bytes: bytes, mirrors: culprits)
        let failure = BatchFetchError(.checksumMismatch, "piece \(index) (bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)) does not match its sha256")
        let others = liveMirrors.filter { !culprits.contains($0) }
        if others.isEmpty {
            if badCounts[index, default: 0] >= 2 {
                bad.fatal = failure
                stop(failure)
            }
        } else {
            for mirror in culprits { drop(mirror, failure) }
        }
        return bad
    }
}

extension SegmentPlanner {
    /// The attempt log's entry for a bad piece (code `piece_mismatch`): fetched again, or with
    /// `fatal` bad again with nothing left to ask.
    static func pieceFailure(_ piece: AttemptRecord.Piece, fatal: Bool) -> BatchFetchError {
        BatchFetchError(.pieceMismatch, "piece \(piece.index) (bytes \(piece.bytes.lowerBound)-\(piece.bytes.upperBound - 1)) "
            + "does not match its sha256; fetched again" + (fatal ? " and bad again: the job fails" : ""))
    }
}

private extension SegmentPlanner.Claim {
    /// Bytes of the range not yet written.
    var unwritten: Int64 { range.upperBound - max(written, range.lowerBound) }
}
