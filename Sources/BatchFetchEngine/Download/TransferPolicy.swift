import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec

/// How one job's bytes are asked for: one stream or several connections (segments), whole
/// bodies or bounded ranges, and the size of each range. Decided once per job from the manifest,
/// the run's memory cap and rate limit, and whether the transport has backpressure; the state
/// machine plans requests with it and the segmented transfer sizes its ranges by it.
struct TransferPolicy: Sendable, Equatable {
    /// Parallel connections for one file; 1 is a single stream.
    var segments: Int
    /// Segment only files at least this large: ``autoSegmentSize`` for `segments: auto`, whose
    /// size may be known only from the first response; 0 for an explicit count.
    var segmentedFrom: Int64
    /// Size of the first (probing) range and of each range a segment fetches.
    var pieceSize: Int64
    /// Size of the bounded ranges that keep a transport without backpressure inside the per-job
    /// memory cap (see ``DownloadStateMachine``).
    var pauseChunk: Int64
    /// With a rate limit: bounded ranges of this size from the start, so the downloader can wait
    /// for the rate limiter before each one (URLSession cannot be slowed down otherwise).
    var pacedChunk: Int64?
    /// Fetch bodies larger than ``pauseChunk`` in bounded ranges from the start, instead of
    /// streaming them and switching to ranges after an overflow (a transport without
    /// backpressure).
    var boundedBodies: Bool

    init(segments: Int = 1, segmentedFrom: Int64 = 0, pieceSize: Int64 = 16 << 20, pauseChunk: Int64 = 8 << 20,
         pacedChunk: Int64? = nil, boundedBodies: Bool = false) {
        self.segments = segments
        self.segmentedFrom = segmentedFrom
        self.pieceSize = pieceSize
        self.pauseChunk = pauseChunk
        self.pacedChunk = pacedChunk
        self.boundedBodies = boundedBodies
    }

    /// The policy for `job` in a run with this memory cap per job and rate limiter, on a
    /// transport with or without backpressure; `rangeSize` overrides the piece size (tests,
    /// benchmarks).
    init(job: Job, memoryCap: Int, rateLimiter: RateLimiter?, backpressure: Bool, perHost: Int = Manifest.defaultPerHost,
         rangeSize: Int64? = nil) {
        let segments = Self.segmentCount(job, rateLimited: rateLimiter != nil, perHost: perHost)
        self.init(
            segments: segments, segmentedFrom: job.settings.segments == .auto ? Self.autoSegmentSize : 0,
            pieceSize: rangeSize ?? Self.pieceSize(memoryCap: memoryCap, segments: segments, total: job.size, backpressure: backpressure),
            pauseChunk: Int64(memoryCap), pacedChunk: rateLimiter?.chunkSize(cap: Int64(memoryCap)),
            boundedBodies: !backpressure)
    }

    /// The first range of a segmented download, fetched alone before the other connections
    /// start (its answer proves the size and the validator): a piece, but at most 256 KiB — a
    /// 16 MiB first piece over a connection capped at 20 MB/s kept three connections idle for
    /// most of a second, and a 2 MiB one still a tenth of a second (bench/results/mirrors.md).
    /// With `segments: auto` and no size in the manifest a whole piece, so a file smaller than
    /// it comes in that one request.
    func probeSize(expectedSize: Int64?) -> Int64 {
        segmentedFrom > 0 && expectedSize == nil ? pieceSize : min(pieceSize, 256 << 10)
    }

    /// The size of each bounded range: paced, else the memory cap's.
    var chunkSize: Int64 { pacedChunk ?? pauseChunk }

    /// Whether a body of `expectedSize` (nil: unknown) is asked for in bounded ranges from the
    /// first request.
    func boundsRanges(expectedSize: Int64?) -> Bool {
        pacedChunk != nil || (boundedBodies && (expectedSize ?? .max) > pauseChunk)
    }

    /// Connections for one file: `segments: N`, or for `auto` 4 (at most `per_host`) — unless
    /// the manifest gives a size below ``autoSegmentSize``. Without a size, the first answer
    /// that tells the size decides: the rest is segmented only when it is at least
    /// ``segmentedFrom`` (``DownloadStateMachine``). A rate-limited run paces single streams
    /// instead (more connections cannot beat the limit).
    static func segmentCount(_ job: Job, rateLimited: Bool, perHost: Int = Manifest.defaultPerHost) -> Int {
        guard !rateLimited else { return 1 }
        switch job.settings.segments {
        case .count(let count): return count
        case .auto:
            return (job.size ?? autoSegmentSize) >= autoSegmentSize ? max(1, min(JobSettings.Segments.autoCount, perHost)) : 1
        }
    }

    static let autoSegmentSize: Int64 = 64 << 20

    /// Each connection's share of a job's memory cap: the cap divided among its connections, so
    /// a job holds about the cap whatever its segment count (bench/results/history.md), but at least ``minimumShare``, below
    /// which the requests (one per range without backpressure) would cost more than they save.
    ///
    /// With backpressure half of that: a connection's sink stops its reads at its share, so the
    /// share bounds only what waits for the disk, not the range size or the request count (the
    /// smaller share kept four connections as fast and held less: bench/results/archives.md).
    /// Without backpressure the share is the range size, one request each: halving it saved
    /// memory but cost speed, most with latency (bench/results/history.md).
    static func connectionShare(memoryCap: Int, connections: Int, backpressure: Bool = false) -> Int {
        max(minimumShare, memoryCap / max(1, connections) / (backpressure ? 2 : 1))
    }

    static let minimumShare = 512 << 10

    /// The mirrors a segmented transfer draws from, the current one first, and what to warn: with
    /// `sources: all` and proof of one content (`proven`: a pinned sha256 or piece hashes) the
    /// current mirror and every later one (the earlier ones already failed over); without proof
    /// only the current one, with a warning (Docs/Mirrors.md).
    static func sourceMirrors(_ sources: JobSettings.Sources, current: Int, count: Int, proven: Bool)
        -> (mirrors: [Int], warning: String?) {
        guard sources == .all, current + 1 < count else { return ([current], nil) }
        guard proven else {
            return ([current], "'sources: all' without a pinned sha256 or piece hashes: bytes of several mirrors "
                + "cannot be proven to be one file, so it is fetched from one mirror at a time")
        }
        return (Array(current..<count), nil)
    }

    /// The mirror a hedge asks when a segmented transfer draws from one mirror: the next one,
    /// given proof of one content (a `sources: first` job, Docs/Mirrors.md); nil when hedges ask
    /// the same mirror again.
    static func hedgeMirror(drawnFrom mirrors: [Int], count: Int, proven: Bool) -> Int? {
        guard proven, mirrors.count == 1, mirrors[0] + 1 < count else { return nil }
        return mirrors[0] + 1
    }

    /// The mirrors that fetch again the bad pieces of a body that arrived whole from `current`:
    /// every later one, and `current` only when there is none (Docs/Mirrors.md). The pieces'
    /// hashes prove each one, whatever `sources` says.
    static func repairMirrors(current: Int, count: Int) -> [Int] {
        current + 1 < count ? Array(current + 1..<count) : [current]
    }

    /// The shortest half of a range worth stealing: 2 MiB on a transport with backpressure, where
    /// a range cut short with more than 1 MiB to go is cancelled at once (closer to its end it
    /// is left a grace to finish: ``AttemptHandler/interrupt()``); without it (URLSession) a range is a piece of a
    /// connection's memory share, too short to split — a cancel there waits out the
    /// cancel-versus-completion trap near a transfer's end (``AttemptHandler/interrupt()``).
    static func minimumSteal(pieceSize: Int64, backpressure: Bool) -> Int64 {
        backpressure ? 2 << 20 : max(2 << 20, pieceSize)
    }

    /// Connections for a segmented transfer over `mirrors` hosts: the job's segments, at most
    /// `per_host` on each host (a job that falls back to one mirror opens `min(segments, per_host)`).
    static func connections(segments: Int, hosts: Int, perHost: Int) -> Int {
        min(segments, max(1, perHost) * max(1, hosts))
    }

    /// Bodies up to this size get no sidecar: a partial without one is fetched again whole
    /// (small files are cheaper to fetch again than to make resumable).
    static let resumableSize: Int64 = 4 << 20

    /// Whether a body of `expectedSize` (nil: unknown) starts in a part without a name
    /// (``PartialFiles/openPart(unnamed:)``): one stream of a body no later run would resume,
    /// at most ``resumableSize``; or a body of unknown size, whose part is named when its head
    /// shows one worth resuming (``PartialFiles/writeSidecar(_:)``).
    func keepsPartUnnamed(expectedSize: Int64?) -> Bool {
        guard let expectedSize else { return true }
        return segments == 1 && expectedSize <= Self.resumableSize
    }

    /// Range size for segments: each connection's share of the memory cap
    /// (``connectionShare(memoryCap:connections:)``).
    ///
    /// A range never has to be cancelled: its connection's sink holds a whole range, and the next
    /// one is asked for only when it is written, so memory is bounded even when the disk is slower
    /// than the network — without the cancel that FoundationNetworking 6.3 can trap on when it
    /// races the end of a transfer (bench/results/history.md). Small ranges also keep the written prefix, which the hash follows, close behind.
    ///
    /// With a transport that has backpressure, memory does not depend on the range size: a
    /// quarter of each connection's share of the file (when the manifest gives its size), between
    /// 2 and 16 MiB, keeps the requests few and the hash close behind.
    static func pieceSize(memoryCap: Int, segments: Int, total: Int64?, backpressure: Bool) -> Int64 {
        let segments = Int64(max(1, segments))
        guard backpressure else { return Int64(connectionShare(memoryCap: memoryCap, connections: Int(segments))) }
        return total.map { min(16 << 20, max(2 << 20, $0 / (segments * 4))) } ?? 16 << 20
    }
}
