import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// Every decision of one job's download — resume or restart, retry or fail, which mirror, when a
/// partial may be published — as a pure state machine. The owner (``JobDownloader``) feeds it
/// events and performs the actions it returns; nothing here touches sockets, files or clocks, so
/// each rule is tested directly (`DownloadStateMachineTests`). Whether to retry and how long to
/// wait, and which redirects to follow, it asks the job's ``RetryPolicy`` and ``RedirectPolicy``,
/// the same values `check` and `pin` use (Docs/Contracts.md §3).
///
/// Resume rules (Docs/Contracts.md §3): a partial is continued with `Range: bytes=N-` and `If-Range`
/// carrying a strong ETag, else Last-Modified. A 206 must carry a `Content-Range` that starts at N,
/// else restart; a 200 to a range request means the server ignored it or the file changed:
/// restart from zero with that body; 416 with a complete partial: publish after verifying; a weak
/// ETag or no validator: restart. Across mirrors a partial continues only with a strong ETag
/// (which If-Range then checks) or a pinned checksum.
///
/// Memory: URLSession cannot pause a transfer. With ``TransferPolicy/boundedBodies`` a file larger
/// than ``TransferPolicy/pauseChunk`` (or of unknown size) is fetched in bounded ranges of that
/// size, each one sent only after the previous one is on disk, so the server can never send more
/// than one range ahead of the disk; the first range is sent without If-Range and its answer
/// names the size and the validator. A server that ignores ranges answers 200 with the whole
/// file, which streams; when the sink's unwritten bytes then pass their cap the transfer is
/// cancelled (``BodyOutcome/overflow``) and the rest comes in bounded ranges. Cancelling is the
/// last resort: libcurl keeps reading until the cancel takes effect (hundreds of MiB on
/// loopback, bench/results/history.md), and a cancel racing a transfer's end can trap in FoundationNetworking.
///
/// Segments: with ``TransferPolicy/segments`` above 1 the first request asks for one piece
/// (`Range: bytes=0-…`); its 206 names the size and the validator, and the machine answers
/// ``Action/segment(_:)`` for the rest, which ``SegmentedTransfer`` fetches over several
/// connections. A 200 instead means the server ignores ranges: that body is the whole file, one
/// stream. When segmenting ends early, ``segmentsEnded(writtenThrough:failure:attempts:)`` continues
/// from the written prefix as a single stream, with the usual retries and mirror failover.
struct DownloadStateMachine: Sendable {
    /// The fixed facts of a job.
    struct Configuration: Sendable {
        /// The job's mirrors, in order.
        var mirrors: [MirrorURL]
        var expectedSize: Int64?
        var checksumPinned: Bool
        /// Retries, backoff and the Retry-After cap, shared with the mirror probe.
        var retry: RetryPolicy
        /// Which redirects are followed, shared with the mirror probe.
        var redirect: RedirectPolicy
        /// One stream or segments, whole bodies or bounded ranges, and their sizes.
        var transfer: TransferPolicy

        init(mirrors: [MirrorURL], expectedSize: Int64?, checksumPinned: Bool, retry: RetryPolicy, redirect: RedirectPolicy,
             transfer: TransferPolicy = TransferPolicy()) {
            self.mirrors = mirrors
            self.expectedSize = expectedSize
            self.checksumPinned = checksumPinned
            self.retry = retry
            self.redirect = redirect
            self.transfer = transfer
        }
    }

    enum Action: Sendable, Equatable {
        case send(PlannedRequest)
        case sendAfter(PlannedRequest, RetryDelay)
        /// The partial already holds the whole file (416): verify it and publish.
        case verifyPartial
        /// The body is complete: verify and publish.
        case verify
        /// Fetch the rest over several connections.
        case segment(SegmentStart)
        /// 304 to the conditional request: the file at `dest` is current.
        case notModified
        case fail(BatchFetchError)
    }

    /// The decision on a response head: take its body as planned, or act on it without the body
    /// (follow a redirect, retry, fail over, publish a complete partial…).
    enum AfterHead: HeadDecision, Equatable {
        case receive(BodyPlan)
        case next(Action)

        var acceptsBody: Bool {
            if case .receive = self { return true }
            return false
        }
    }

    /// Where a segmented transfer starts: the content it continues and what is already written.
    struct SegmentStart: Sendable, Equatable {
        /// The URL to ask (the mirror, or where it redirected).
        var url: URL
        var total: Int64
        /// The sidecar naming the content; its `ranges_done` says what is written.
        var sidecar: Sidecar
        var done: ByteRanges
        /// The mirror that wrote `done` when the sidecar does not say (`ranges_from`); nil when
        /// none of the job's.
        var doneFrom: Int?
        /// Pieces a body that arrived whole got wrong, fetched again alone
        /// (``piecesBad(_:done:)``); the rest of the part is `done`.
        var repair: [Int] = []
    }

    /// How a response body ended, as seen by the owner.
    enum BodyOutcome: Sendable, Equatable {
        case complete
        case failed(TransportFailure)
        /// The unwritten buffer passed its cap; the transfer was cancelled to let the disk catch up.
        case overflow
        /// The server sent more than `BodyPlan.end`.
        case tooLong
        /// Writing failed; not the server's fault, so no retry or failover.
        case diskError(BatchFetchError)
    }

    /// Where the job is between two events, and what the next event must be about. Every event
    /// method checks that it fits the phase (a precondition: the owner calling out of turn is a
    /// bug, not a server's fault). What matters only in one phase lives in its payload.
    enum Phase: Equatable {
        /// Nothing asked yet: ``start(local:)``. `revalidating` are the validators of the file at
        /// `dest` (``revalidate(etag:lastModified:)``), which the first request carries.
        case idle(revalidating: Validators?)
        /// `request` is sent, or waits for its retry delay: its head
        /// (``headReceived(_:remaining:now:)``) or its failure (``requestFailed(_:remaining:)``)
        /// comes next. `turn` says whether it starts an attempt or continues one.
        case requesting(PlannedRequest, Turn)
        /// A body is being written and must end at `end` (when known): ``bodyFinished(_:flushed:remaining:)``.
        case receiving(end: Int64?)
        /// A segmented transfer runs; `resuming` are the bytes an earlier run's segments wrote
        /// (a resume once they are proven): ``segmentsFinished(attempts:)`` or
        /// ``segmentsEnded(writtenThrough:failure:attempts:)``.
        case segmenting(resuming: Int64?)
        /// A complete body or partial is being verified: published by the owner, or
        /// ``verificationFailed(_:)``.
        case verifying
        /// Failed, or confirmed unchanged (304): no more events.
        case finished
    }

    /// What a request is to the job's attempts (Docs/Contracts.md §5: an attempt is one try of
    /// the job against a mirror; ranges are not attempts).
    enum Turn: Sendable, Equatable {
        /// A new attempt. `resuming`: its range continues bytes an earlier run or a failed
        /// attempt left (a resume, for the report), not the previous bounded range.
        case attempt(resuming: Bool)
        /// The next bounded range of the current attempt, or a range asked again after the disk
        /// fell behind: its answer updates that attempt's record instead of adding one.
        case continuing
    }

    /// A file's validators, as `refresh: if-changed` sends them in a conditional request.
    struct Validators: Sendable, Equatable {
        var etag: String?
        var lastModified: String?
    }

    /// The content being assembled in the part: how many of its bytes are known good, which
    /// mirror they came from, and what names the content (its validators and size). Discarded
    /// as one when the content turns out to be another.
    struct Partial: Sendable, Equatable {
        var bytes: Int64 = 0
        /// The mirror the bytes came from; nil when none of the job's mirrors (an earlier run's).
        var mirror: Int?
        var etag: String?
        var lastModified: String?
        var total: Int64?
        /// The content's sha256 (hex) as the server announced it with a whole body
        /// (`x-amz-checksum-sha256`, ``ResponseHeaders/announcedSHA256(_:)``): verified too.
        var sha256: String?
        /// The `Content-Type` of the response that began the content (``HTMLGuard``).
        var contentType: String?

        /// What `If-Range` carries: a strong ETag, else the date.
        var validator: String? { etag ?? lastModified }
    }

    /// Which mirror the job asks, where it was redirected to, and the URL asked now.
    struct Route: Sendable, Equatable {
        var mirror = 0
        var url: URL
        /// Redirect targets followed on this mirror, in order, as they may be printed.
        var redirects: [String] = []
    }

    let configuration: Configuration
    private(set) var phase = Phase.idle(revalidating: nil)
    private(set) var route: Route
    private(set) var log = AttemptLog()
    private(set) var partial = Partial()
    /// Offset the first successful resume continued from, for the report; nil when the file was
    /// fetched from byte 0 after all.
    private(set) var resumedFrom: Int64?
    private(set) var lastStatus: Int?
    /// Fetch in bounded ranges: from the start (paced, or bounded bodies), or after an overflow.
    private var boundedRanges = false
    /// Segmenting is offered once per job; after it ends early the job is one stream.
    private var segmentingOffered = false
    /// Segmented transfers that stopped because the content changed.
    private var changedRestarts = 0
    /// A partial that continued older bytes, or bytes of several mirrors, failed verification
    /// and the file was fetched whole once more (``verificationFailed(_:)``): a second failure
    /// gives the mirror up.
    private var refetchedWhole = false
    /// The bytes being verified came from more than one mirror (`sources: all`).
    private var mixedMirrors = false
    /// A file whose mixed bytes failed is fetched from one mirror at a time from then on.
    private(set) var oneMirrorOnly = false
    /// Bad pieces of a streamed body were fetched again (once per job).
    private var piecesRepaired = false

    var mirrorIndex: Int { route.mirror }
    var redirects: [String] { route.redirects }
    var attempts: [AttemptRecord] { log.records }
    /// Validators and size of the content being assembled (after a download, of the file).
    var etag: String? { partial.etag }
    var lastModified: String? { partial.lastModified }
    var totalSize: Int64? { partial.total }
    var announcedSHA256: String? { partial.sha256 }
    var contentType: String? { partial.contentType }

    init(configuration: Configuration) {
        self.configuration = configuration
        precondition(!configuration.mirrors.isEmpty, "a job has at least one mirror")
        route = Route(url: configuration.mirrors[0].url)
        boundedRanges = configuration.transfer.boundsRanges(expectedSize: configuration.expectedSize)
    }

    // MARK: - Events

    /// The first request, given what is on disk.
    mutating func start(local: LocalPartial?) -> Action {
        guard case .idle(let revalidating) = phase else { preconditionFailure("start in phase \(phase)") }
        if let local, local.segmentedBytes > 0, let sidecar = local.sidecar, sidecar.ifRangeValue != nil,
           local.bytes <= (sidecar.totalSize ?? .max), local.bytes <= (configuration.expectedSize ?? .max),
           sidecar.rangesDone == nil || sidecar.totalSize == (configuration.expectedSize ?? sidecar.totalSize) {
            let sameMirror = sidecar.urlSHA256 == configuration.mirrors.first?.identity
            if sameMirror || sidecar.etag != nil || configuration.checksumPinned {
                partial = Partial(
                    bytes: local.bytes, mirror: configuration.mirrors.firstIndex { $0.identity == sidecar.urlSHA256 },
                    etag: sidecar.etag, lastModified: sidecar.lastModified, total: sidecar.totalSize)
                // Resumes every segment; each range's response must prove the same content
                // (``ResponseHeaders/rangeMismatch``). It counts as a resume once they did.
                if let done = sidecar.rangesDone, let segment = offerSegments(done: done, resuming: local.segmentedBytes) {
                    return segment
                }
                return send(resuming: true)
            }
        }
        var first = nextRequest()
        if let revalidating {
            // If-None-Match wins over If-Modified-Since at the server (RFC 9110 §13.2.2).
            first.ifNoneMatch = revalidating.etag
            first.ifModifiedSince = revalidating.etag == nil ? revalidating.lastModified : nil
        }
        return enter(.send(first), .attempt(resuming: false))
    }

    /// The file at `dest` matches the manifest but may be outdated (`refresh: if-changed`): the
    /// first request to the first mirror carries its validators, and a 304 means up to date
    /// (``Action/notModified``). Call before ``start(local:)``.
    mutating func revalidate(etag: String?, lastModified: String?) {
        guard case .idle = phase else { preconditionFailure("revalidate in phase \(phase)") }
        phase = .idle(revalidating: Validators(etag: etag, lastModified: lastModified))
    }

    /// Segmenting ended before every byte was written (`attempts` are the range requests that
    /// failed): continue from the written prefix as one stream.
    /// When the segments stopped because the remote content changed, the prefix belongs to the
    /// old file: it is discarded and the new content fetched from byte 0 (segmented again),
    /// counted as a retry so content that never holds still ends in a failure, not a loop.
    /// A piece bad twice with no other mirror to ask (`checksum_mismatch`) gives the mirror up;
    /// so does a size most mirrors contradict (`size_mismatch`), with its bytes.
    mutating func segmentsEnded(writtenThrough prefix: Int64, failure: BatchFetchError, attempts: [AttemptRecord]) -> Action {
        guard case .segmenting(let resuming) = phase else { preconditionFailure("segments ended in phase \(phase)") }
        log.append(contentsOf: attempts)
        partial.bytes = prefix
        partial.mirror = route.mirror
        if failure.code == .checksumMismatch { return failMirror(failure) }
        if failure.code == .sizeMismatch {
            // Most mirrors serve another size than this one: its bytes are another file's, and
            // the next mirror starts over, segmented again.
            record(status: nil, failure: failure)
            discardPartial()
            segmentingOffered = false
            return failMirror(failure)
        }
        if failure.code == .remoteChanged {
            discardPartial()
            // The first change is simply new content; content that keeps changing uses retries.
            if changedRestarts > 0, !log.countFailure(policy: configuration.retry) { return failMirror(failure) }
            changedRestarts += 1
            segmentingOffered = false
        }
        return send(resuming: resuming != nil)
    }

    /// Records the failed range requests of a segmented transfer that wrote every byte (it is
    /// verified next); a transfer that continued an earlier run's ranges is now a resume.
    /// `mixed`: more than one mirror served its bytes.
    mutating func segmentsFinished(attempts: [AttemptRecord], mixed: Bool = false) {
        guard case .segmenting(let resuming) = phase else { preconditionFailure("segments finished in phase \(phase)") }
        log.append(contentsOf: attempts)
        mixedMirrors = mixed
        if let resuming {
            resumedFrom = resuming
            if lastStatus == nil {
                // Started from an earlier run's sidecar with no request of the machine's own:
                // the segments' 206s are this attempt.
                lastStatus = 206
                record(status: 206, failure: nil)
            }
        }
        phase = .verifying
    }

    /// Whether the first request asks for one piece to start segments from: segments wanted and
    /// the file known to be large enough (an explicit count, or `auto` with a size in the
    /// manifest), or `auto` without a size on a transport with backpressure, where the piece's
    /// answer tells the size. On a transport without it the first request is a bounded range
    /// anyway, and its answer tells the size just as well. Either way the size decides whether
    /// the rest is segmented (``offerSegments(done:resuming:)``); a file smaller than the first
    /// request costs no extra one, and a whole streamed body is never split. (`auto` without a
    /// size as one stream on nio left a mirror that caps each connection at one connection's
    /// speed.)
    private var segmentsPlanned: Bool {
        let transfer = configuration.transfer
        return transfer.segments > 1 && (transfer.segmentedFrom == 0 || configuration.expectedSize != nil || !transfer.boundedBodies)
    }

    /// `.segment` for the rest of the current content, when it is worth it: segments wanted,
    /// size and validator known, the file large enough (`segments: auto`), and more than one
    /// piece left.
    private mutating func offerSegments(done: ByteRanges, resuming: Int64? = nil) -> Action? {
        guard configuration.transfer.segments > 1, !segmentingOffered, let total = partial.total, partial.validator != nil,
              total >= configuration.transfer.segmentedFrom, total - done.count > configuration.transfer.pieceSize
        else { return nil }
        return segments(total: total, done: done, resuming: resuming)
    }

    /// Enters the segmenting phase for the rest of the current content of `total` bytes past
    /// `done` (`repair`: only those pieces are missing) and says where it starts.
    private mutating func segments(total: Int64, done: ByteRanges, resuming: Int64? = nil, repair: [Int] = []) -> Action {
        segmentingOffered = true
        phase = .segmenting(resuming: resuming)
        var sidecar = sidecar()
        sidecar.rangesDone = done
        return .segment(SegmentStart(url: route.url, total: total, sidecar: sidecar, done: done, doneFrom: partial.mirror,
                                     repair: repair))
    }

    /// A response head arrived for the pending request.
    mutating func headReceived(_ head: TransportResponseHead, remaining: Double? = nil, now: Date = Date()) -> AfterHead {
        guard case .requesting(let request, let turn) = phase else { preconditionFailure("a response head in phase \(phase)") }
        switch decide(head, request: request, turn: turn, remaining: remaining, now: now) {
        case .receive(let plan):
            phase = .receiving(end: plan.end)
            return .receive(plan)
        case .next(let action):
            return .next(action)
        }
    }

    /// The download's own answers first (304 to a conditional request, 200, 206, 416 to a
    /// range); every other status as the attempt core says (``AttemptVerdict``).
    private mutating func decide(_ head: TransportResponseHead, request: PlannedRequest, turn: Turn, remaining: Double?,
                                 now: Date) -> AfterHead {
        lastStatus = head.status
        let continuing = turn == .continuing
        switch head.status {
        case 304 where request.ifNoneMatch != nil || request.ifModifiedSince != nil:
            record(status: 304, failure: nil, continuing: continuing)
            return .next(enter(.notModified))
        case 200:
            return acceptFullBody(head, request: request, continuing: continuing)
        case 206:
            return acceptRange(head, request: request, turn: turn)
        case 416 where request.rangeStart != nil:
            let total = ResponseHeaders.contentRange(head.header("content-range"))?.total ?? partial.total
            if let total, total == request.rangeStart {
                record(status: 416, failure: nil, continuing: continuing)
                return .next(enter(.verifyPartial))
            }
            record(status: 416, failure: BatchFetchError(.rangeNotHonoured, "416 for a resume at \(request.rangeStart!)"),
                   continuing: continuing)
            discardPartial()
            return .next(send(resuming: true))
        default:
            break
        }
        let verdict = AttemptVerdict(status: head.status, retryAfter: head.header("retry-after"), subject: "from \(servedURL)",
                                     now: now)
        if verdict == .redirect { return .next(redirect(head, request: request, turn: turn)) }
        record(status: head.status, failure: verdict.failure, continuing: continuing)
        return .next(act(on: verdict, remaining: remaining))
    }

    /// The body of an accepted response ended; `flushed` is the partial's size on disk now.
    mutating func bodyFinished(_ outcome: BodyOutcome, flushed: Int64, remaining: Double? = nil) -> Action {
        guard case .receiving(let end) = phase else { preconditionFailure("a body ended in phase \(phase)") }
        partial.bytes = flushed
        switch outcome {
        case .complete:
            if let end, flushed < end {
                return act(on: .retry(BatchFetchError(.connection, "connection closed after \(flushed) of \(end) bytes"), retryAfter: nil),
                           remaining: remaining, amending: true)
            }
            if let total = partial.total, flushed < total {
                // The first piece (segments) or one bounded range arrived; the file goes on.
                if let segment = offerSegments(done: ByteRanges([0..<flushed])) { return segment }
                return enter(.send(nextRequest()), .continuing)
            }
            if partial.total == nil { partial.total = flushed }
            return enter(.verify)
        case .tooLong:
            let failure = BatchFetchError(.sizeMismatch, "\(servedURL) sent more than the expected \(end ?? flushed) bytes")
            discardPartial()
            amendLastAttempt(failure)
            return failMirror(failure)
        case .overflow, .failed(.overloaded):
            return overflowed(remaining: remaining)
        case .failed(let failure):
            return act(on: AttemptVerdict(failure, subject: "from \(servedURL)"), remaining: remaining, amending: true)
        case .diskError(let failure):
            amendLastAttempt(failure)
            return enter(.fail(failure))
        }
    }

    /// The transfer was stopped to let the disk catch up: the rest comes in bounded ranges.
    private mutating func overflowed(remaining: Double?) -> Action {
        boundedRanges = boundedRanges || partial.total != nil
        guard partial.validator != nil else {
            // Nothing can prove the next range belongs to the same file: start over, and
            // count it, so a disk that never keeps up ends in a failure, not a loop.
            let failure = BatchFetchError(.connection, "the disk fell behind and \(servedURL) gives no validator to resume with")
            return act(on: .retry(failure, retryAfter: 0), remaining: remaining, amending: true)
        }
        return enter(.send(nextRequest()), .continuing)
    }

    /// The request failed before any response head.
    mutating func requestFailed(_ failure: TransportFailure, remaining: Double? = nil) -> Action {
        guard case .requesting(let request, let turn) = phase else { preconditionFailure("a request failed in phase \(phase)") }
        if failure == .overloaded {
            // Shed by the transport before its head: nothing arrived, ask the same again.
            return enter(.send(request), turn)
        }
        let verdict = AttemptVerdict(failure, subject: "from \(servedURL)")
        if case .interrupted = verdict {} else { record(status: nil, failure: verdict.failure, continuing: turn == .continuing) }
        return act(on: verdict, remaining: remaining)
    }

    /// The finished partial has the wrong size or checksum (a good one is simply published).
    ///
    /// A partial that continued older bytes may hold a stale prefix the validators could not
    /// tell from the new content (rsync `-t --inplace` rewrites a file with the same size and
    /// mtime): it is fetched whole once more from the same mirror before the mirror is given up,
    /// so a mirror with good content never costs a failed run. Bytes of several mirrors
    /// (`sources: all` without piece hashes to name the bad one) are fetched whole once more from
    /// the current mirror alone, and from one mirror at a time after that (Docs/Mirrors.md).
    mutating func verificationFailed(_ failure: BatchFetchError) -> Action {
        precondition(phase == .verifying, "verification failed in phase \(phase)")
        // Older bytes: a resumed range was accepted, or a complete partial was answered by 416.
        let olderBytes = resumedFrom != nil || lastStatus == 416
        let mixed = mixedMirrors
        mixedMirrors = false
        discardPartial()
        amendLastAttempt(failure)
        // Only a digest can catch a stale prefix of the right length; a wrong size is the
        // server's own contradiction and fails the mirror as before.
        let contentDiffers = [.checksumMismatch, .lockMismatch, .signatureInvalid].contains(failure.code)
        if (olderBytes || mixed) && contentDiffers && !refetchedWhole {
            refetchedWhole = true
            oneMirrorOnly = oneMirrorOnly || mixed
            segmentingOffered = false
            return send(resuming: false)
        }
        return failMirror(failure)
    }

    /// Pieces `bad` of a body that arrived whole failed their hashes: only they are fetched
    /// again, over a segmented transfer whose `done` is every other byte (a bad piece's mirror
    /// is avoided there while another one may serve it). Once per job, and only when a
    /// validator and the size are known; nil when not offered (the body fails as a whole).
    mutating func piecesBad(_ bad: [AttemptRecord.Piece], done: ByteRanges) -> Action? {
        precondition(phase == .verifying, "pieces checked in phase \(phase)")
        guard !bad.isEmpty, !piecesRepaired, let total = partial.total, partial.validator != nil else { return nil }
        piecesRepaired = true
        for piece in bad {
            log.record(mirror: route.mirror, url: servedURL, status: nil,
                       failure: SegmentPlanner.pieceFailure(piece, fatal: false), piece: piece)
        }
        return segments(total: total, done: done, repair: bad.map(\.index))
    }

    /// The job's deadline passed.
    mutating func deadlineExceeded(after seconds: Double) -> Action {
        enter(.fail(BatchFetchError(.deadlineExceeded, "job deadline of \(seconds)s exceeded")))
    }

    /// The owner reports how long it actually waited before the next attempt.
    mutating func waited(_ seconds: Double) {
        guard case .requesting = phase else { preconditionFailure("waited in phase \(phase)") }
        log.waited(seconds)
    }

    /// The phase an action leads to (``Phase``); a request starts an attempt or continues one
    /// as `turn` says, and a `.segment` set its own phase when it was offered.
    private mutating func enter(_ action: Action, _ turn: Turn = .attempt(resuming: true)) -> Action {
        switch action {
        case .send(let request), .sendAfter(let request, _): phase = .requesting(request, turn)
        case .verify, .verifyPartial: phase = .verifying
        case .segment: break
        case .notModified, .fail: phase = .finished
        }
        return action
    }

    // MARK: - Decisions

    /// Acts on the attempt core's verdict on a failed attempt (already recorded, or with
    /// `amending` the failure of the attempt recorded at its head; an interruption is no failure
    /// of the attempt): wait and retry, give the mirror up, or stop.
    private mutating func act(on verdict: AttemptVerdict, remaining: Double?, amending: Bool = false) -> Action {
        switch verdict {
        case .retry(let failure, _), .nextMirror(let failure):
            if amending { amendLastAttempt(failure) }
        case .success, .redirect, .interrupted:
            break
        }
        switch verdict {
        case .success, .redirect:
            preconditionFailure("no attempt to act on after \(verdict)")
        case .retry(let failure, let retryAfter):
            switch log.retry(after: failure, retryAfter: retryAfter, remaining: remaining, policy: configuration.retry) {
            case .giveUp(let reason):
                amendLastAttempt(reason)
                return failMirror(reason)
            case .wait(let delay):
                return enter(.sendAfter(nextRequest(), delay), .attempt(resuming: true))
            }
        case .nextMirror(let failure):
            return failMirror(failure)
        case .interrupted(let failure):
            return enter(.fail(failure))
        }
    }

    private mutating func redirect(_ head: TransportResponseHead, request: PlannedRequest, turn: Turn) -> Action {
        switch configuration.redirect.decide(status: head.status, location: head.header("location"), from: route.url,
                                             followed: route.redirects.count, bucketRegion: head.header("x-amz-bucket-region")) {
        case .refuse(let failure):
            record(status: head.status, failure: failure, continuing: turn == .continuing)
            return failMirror(failure)
        case .follow(let target):
            route.redirects.append(configuration.redirect.redactor.redact(target.absoluteString))
            route.url = target
            var next = request
            next.url = target
            return enter(.send(next), turn)
        }
    }

    private mutating func acceptFullBody(_ head: TransportResponseHead, request: PlannedRequest, continuing: Bool) -> AfterHead {
        let length = ResponseHeaders.contentLength(head)
        if let expected = configuration.expectedSize, let length, length != expected {
            let failure = BatchFetchError(.sizeMismatch, "\(servedURL) announces \(length) bytes, expected \(expected)")
            record(status: 200, failure: failure, continuing: continuing)
            return .next(failMirror(failure))
        }
        record(status: 200, failure: nil, continuing: continuing)
        // A 200 to a range request: the server ignored the range or the file changed. Either way
        // this body is the whole file, so it replaces the partial from byte 0.
        partial = Partial(bytes: 0, mirror: route.mirror, etag: ResponseHeaders.strongETag(head),
                          lastModified: head.header("last-modified"), total: length, sha256: ResponseHeaders.announcedSHA256(head),
                          contentType: head.header("content-type"))
        resumedFrom = nil
        let bodyEnd = length ?? configuration.expectedSize
        return .receive(BodyPlan(offset: 0, end: bodyEnd, sidecar: sidecar()))
    }

    private mutating func acceptRange(_ head: TransportResponseHead, request: PlannedRequest, turn: Turn) -> AfterHead {
        let continuing = turn == .continuing
        guard let start = request.rangeStart else {
            let failure = BatchFetchError(.rangeNotHonoured, "206 to a request without Range from \(servedURL)")
            record(status: 206, failure: failure, continuing: continuing)
            return .next(failMirror(failure))
        }
        let range = ResponseHeaders.contentRange(head.header("content-range"))
        // A bounded range past the end of a smaller file ends at its last byte.
        let fileLast = range?.total.map { $0 - 1 }
        let wantedLast = request.rangeEnd.map { end in fileLast.map { min(end, $0) } ?? end } ?? fileLast
        guard let range, range.first == start, let last = range.last, wantedLast == nil || last == wantedLast! else {
            let failure = BatchFetchError(
                .rangeNotHonoured,
                "206 with Content-Range '\(head.header("content-range") ?? "none")' for a resume at \(start)")
            record(status: 206, failure: failure, continuing: continuing)
            discardPartial()
            return .next(act(on: .retry(failure, retryAfter: 0), remaining: nil))
        }
        if let length = ResponseHeaders.contentLength(head), length != last - start + 1 {
            let failure = BatchFetchError(
                .sizeMismatch, "\(servedURL) announces \(length) bytes for the \(last - start + 1)-byte range \(start)-\(last)")
            record(status: 206, failure: failure, continuing: continuing)
            return .next(failMirror(failure))
        }
        if let sent = request.ifRange, let mismatch = ResponseHeaders.rangeMismatch(head, ifRange: sent, recordedTotal: partial.total) {
            // The server ignored If-Range (or lost the validator): these bytes may belong to
            // another file, so the partial goes and the file is fetched whole.
            let failure = BatchFetchError(.remoteChanged, "\(mismatch) from \(servedURL)")
            record(status: 206, failure: failure, continuing: continuing)
            discardPartial()
            return .next(act(on: .retry(failure, retryAfter: 0), remaining: nil))
        }
        if let expected = configuration.expectedSize, let total = range.total, total != expected {
            let failure = BatchFetchError(.sizeMismatch, "\(servedURL) has \(total) bytes, expected \(expected)")
            record(status: 206, failure: failure, continuing: continuing)
            discardPartial()
            return .next(failMirror(failure))
        }
        record(status: 206, failure: nil, continuing: continuing)
        if let total = range.total { partial.total = total }
        partial.mirror = route.mirror
        let bodyEnd = last + 1
        guard start > 0 else {
            // A paced download's first range: this response names the content from now on.
            partial.etag = ResponseHeaders.strongETag(head)
            partial.lastModified = head.header("last-modified")
            // A checksum sent with a range is the whole object's only when the range is whole.
            partial.sha256 = range.total == last + 1 ? ResponseHeaders.announcedSHA256(head) : nil
            partial.contentType = head.header("content-type")
            resumedFrom = nil
            return .receive(BodyPlan(offset: 0, end: bodyEnd, sidecar: sidecar()))
        }
        if resumedFrom == nil, turn == .attempt(resuming: true) { resumedFrom = start }
        return .receive(BodyPlan(offset: start, end: bodyEnd, sidecar: nil))
    }

    /// Gives up on the current mirror: the next one, or the job fails with `failure`.
    private mutating func failMirror(_ failure: BatchFetchError) -> Action {
        guard route.mirror + 1 < configuration.mirrors.count else { return enter(.fail(failure)) }
        route = Route(mirror: route.mirror + 1, url: configuration.mirrors[route.mirror + 1].url)
        log.nextMirror()
        // Continue another mirror's partial only when If-Range can check it (strong ETag) or the
        // final checksum will.
        if partial.bytes > 0 && partial.etag == nil && !configuration.checksumPinned { discardPartial() }
        return send(resuming: true)
    }

    /// Sends the next request as a new attempt.
    private mutating func send(resuming: Bool) -> Action {
        enter(.send(nextRequest()), .attempt(resuming: resuming))
    }

    /// The URL in use, as it may be printed: a redirect target (server-given) or the redacted
    /// mirror. After a download, the URL that served the file.
    var servedURL: String {
        route.redirects.last ?? configuration.mirrors[route.mirror].printed
    }

    /// The sidecar naming the content that starts arriving now.
    private func sidecar() -> Sidecar {
        Sidecar(
            url: configuration.mirrors[route.mirror].printed, urlSHA256: configuration.mirrors[route.mirror].identity,
            etag: partial.etag, lastModified: partial.lastModified, totalSize: partial.total)
    }

    /// The next request for the current mirror: a resume when there is a usable partial.
    private func nextRequest() -> PlannedRequest {
        var planned = PlannedRequest(mirrorIndex: route.mirror, url: route.url, rangeStart: nil, ifRange: nil)
        let validator = partial.validator
        let sameMirror = partial.mirror == route.mirror
        if partial.bytes > 0, let validator, sameMirror || partial.etag != nil || configuration.checksumPinned {
            planned.rangeStart = partial.bytes
            planned.ifRange = validator
        }
        if boundedRanges, let total = partial.total, validator != nil {
            planned.rangeStart = partial.bytes
            planned.rangeEnd = min(partial.bytes + configuration.transfer.chunkSize, total) - 1
            planned.ifRange = validator
        } else if partial.bytes == 0, boundedRanges || segmentsPlanned && !segmentingOffered {
            // The first bounded or segmented request: a range without If-Range; a server that
            // ignores ranges answers 200 with the whole file, which is accepted as it is.
            planned.rangeStart = 0
            planned.rangeEnd = (segmentsPlanned && !segmentingOffered ? configuration.transfer.probeSize(expectedSize: configuration.expectedSize) : configuration.transfer.chunkSize) - 1
        }
        return planned
    }

    /// The partial's bytes belong to other content: none are kept.
    private mutating func discardPartial() {
        partial = Partial(mirror: partial.mirror)
        resumedFrom = nil
    }

    private mutating func record(status: Int?, failure: BatchFetchError?, continuing: Bool = false) {
        log.record(mirror: route.mirror, url: servedURL, status: status, failure: failure, continuing: continuing)
    }

    private mutating func amendLastAttempt(_ failure: BatchFetchError) {
        log.amendLast(failure, mirror: route.mirror, url: servedURL)
    }
}
