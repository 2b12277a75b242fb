import BatchFetchSpec
import Foundation

/// Carries out one job: checks whether `dest` is already up to date (``localVerdict()``), takes a
/// twin job's file when one fetched the same URL, or runs the ``DownloadStateMachine`` and
/// performs its actions — requests, waits, writes, segmented transfers, verification and the
/// atomic publish — and records what it verified in the state cache.
final class JobDownloader: @unchecked Sendable {
    struct Context: Sendable {
        /// The output directory, opened once for the run; every file is reached beneath it.
        var root: SafeDirectory
        var transport: any HTTPTransport
        var hosts: HostLimiter
        /// The run's overall `rate_limit`, if any.
        var rateLimiter: RateLimiter?
        var durability: Durability
        var memoryCap: Int
        var writeSize: Int
        var simulatedDiskRate: Int64?
        var segmentRangeSize: Int64?
        var interruption: Interruption
        /// What earlier runs verified (digests and validators by dest).
        var state: StateCache
        /// `per_host`, for transports made for a job's TLS settings.
        var perHost: Int
        /// Where `SSL_CERT_FILE`, `NETRC` and the like are read.
        var environment: [String: String]
    }

    private let job: Job
    private let context: Context
    private let progress: JobProgress
    /// A published file with the same content (a twin job's), to link or copy instead of fetching.
    private let copyFrom: SameContent.Source?
    /// Size and sha256 come from the lockfile (`run --locked`): content that differs is a
    /// `lock_mismatch`.
    private let locked: Bool
    private let files: PartialFiles
    /// Transport, credentials, redirect and retry policies, redaction.
    private let network: JobNetwork
    private let machine: MachineBox
    private let algorithms: [Checksum.Algorithm]
    private let started = DispatchTime.now()
    /// The file at `dest` as found at the start: what a 304 confirms.
    private var revalidating: JobResult?
    private let deadline: DispatchTime?
    private var bytesTransferred: Int64 = 0
    /// Connections used by a segmented transfer, for the report.
    private var segmentsUsed: Int?

    init(job: Job, context: Context, progress: JobProgress? = nil, copyFrom: SameContent.Source? = nil, locked: Bool = false) {
        self.job = job
        self.locked = locked
        self.context = context
        self.progress = progress ?? JobProgress(total: job.size)
        self.copyFrom = copyFrom
        files = PartialFiles(root: context.root, dest: job.dest.resolved)
        algorithms = job.checksums.map(\.algorithm).filter { $0 != .sha256 }
        let network = JobNetwork(job: job, transport: context.transport, perHost: context.perHost, environment: context.environment)
        self.network = network
        let segments = Self.segmentCount(job, rateLimited: context.rateLimiter != nil)
        machine = MachineBox(DownloadStateMachine(configuration: .init(
            mirrors: job.urls.map(Mirror.init),
            expectedSize: job.size, checksumPinned: !job.checksums.isEmpty, retry: network.retry, redirect: network.redirect,
            pauseChunk: Int64(context.memoryCap), pacedChunk: context.rateLimiter?.chunkSize(cap: Int64(context.memoryCap)),
            segments: segments,
            pieceSize: context.segmentRangeSize
                ?? Self.pieceSize(memoryCap: context.memoryCap, segments: segments, total: job.size,
                                  backpressure: network.transport.hasBackpressure),
            boundedBodies: !network.transport.hasBackpressure)))
        deadline = job.settings.deadline.map { .now() + .nanoseconds(Int($0 * 1e9)) }
    }

    func run() async -> JobResult {
        var result: JobResult
        switch localVerdict() {
        case .upToDate(let upToDate):
            result = upToDate
        case .revalidate(let local, let etag, let lastModified):
            revalidating = local
            machine.with { $0.revalidate(etag: etag, lastModified: lastModified) }
            result = await download()
        case .fetch:
            if let copyFrom {
                result = copy(from: copyFrom)
            } else {
                result = await download()
            }
        }
        result.duration = DispatchTime.now().seconds(since: started)
        return result
    }

    // MARK: - Up to date

    enum LocalVerdict {
        /// `dest` matches the manifest: nothing to fetch.
        case upToDate(JobResult)
        /// `dest` matches, but `refresh: if-changed` asks the server (conditional GET).
        case revalidate(JobResult, etag: String?, lastModified: String?)
        case fetch
    }

    /// What the file at `dest` means for this job, without network: it matches the manifest's
    /// size and checksums (digests from the state cache while the file is unchanged, else
    /// hashed once and cached), and `refresh` says whether that is enough.
    func localVerdict() -> LocalVerdict {
        guard job.settings.refresh != .always, let size = files.destSize() else { return .fetch }
        if let expected = job.size, expected != size { return .fetch }
        let dest = job.dest.resolved
        let cached = context.state.entry(for: dest, status: files.destStatus())
        let digests: [String: String]
        if let cached, (algorithms.map(\.rawValue) + ["sha256"]).allSatisfy({ cached.digests[$0] != nil }) {
            digests = cached.digests
        } else if let (hashed, _) = try? files.digests(of: files.destName, also: algorithms) {
            digests = hashed
            context.state.record(dest, status: files.destStatus(), digests: hashed, urlSHA256: cached?.urlSHA256,
                                 etag: cached?.etag, lastModified: cached?.lastModified)
        } else {
            return .fetch
        }
        guard mismatchedChecksum(digests) == nil else { return .fetch }
        var result = JobResult(id: job.id, status: .upToDate, dest: job.dest.redacted)
        result.size = size
        result.checksums = digests
        result.checksumVerified = job.checksums.isEmpty ? nil : true
        // A pinned checksum already says the content is the right one; otherwise if-changed asks
        // the server, conditionally when the state cache has the validators it served.
        guard job.settings.refresh == .ifChanged, job.checksums.isEmpty else { return .upToDate(result) }
        guard let cached, cached.etag ?? cached.lastModified != nil,
              cached.urlSHA256 == job.urls.first.map({ Mirror($0).identity }) else { return .fetch }
        result.etag = cached.etag
        result.lastModified = cached.lastModified
        return .revalidate(result, etag: cached.etag, lastModified: cached.lastModified)
    }

    /// `dest` already matches the manifest, checked locally (for `--dry-run`).
    func upToDateResult() -> JobResult? {
        if case .upToDate(let result) = localVerdict() { return result }
        return nil
    }

    // MARK: - Same content

    /// Takes a twin job's published file: a hard link (a copy across file systems or where links
    /// are refused), verified like a download, published the same way.
    private func copy(from source: SameContent.Source) -> JobResult {
        let digests: [String: String], size: Int64
        do {
            try files.takePart(from: PartialFiles(root: context.root, dest: source.dest))
            (digests, size) = try files.digests(of: files.partName, also: algorithms)
        } catch {
            files.removePartial()
            return finish(failure: error)
        }
        var failure: DownloadFailure?
        if let expected = job.size, expected != size {
            failure = DownloadFailure(.sizeMismatch, "job '\(source.id)' fetched \(size) bytes from the same URL, expected \(expected)")
        } else if let wrong = mismatchedChecksum(digests) {
            failure = DownloadFailure(.checksumMismatch,
                "job '\(source.id)' fetched the same URL with \(wrong.algorithm.rawValue) \(digests[wrong.algorithm.rawValue] ?? "?"), expected \(wrong.hex)")
        }
        if failure == nil {
            do {
                try files.publish(durability: context.durability)
            } catch let error {
                failure = error
            }
        }
        if let failure {
            files.removePartial()
            return finish(failure: failure)
        }
        var result = finish(published: (digests, size))
        result.copiedFrom = source.id
        return result
    }

    // MARK: - Download

    private func download() async -> JobResult {
        let sink: FileSink
        do {
            sink = FileSink(descriptor: try files.openPart(), partPath: files.partPath, algorithms: algorithms,
                            writeSize: context.writeSize, memoryCap: context.memoryCap, writeRate: context.simulatedDiskRate)
        } catch {
            return finish(failure: error)
        }
        var action = machine.with { $0.start(local: files.local()) }
        while true {
            if context.interruption.isInterrupted {
                switch action {
                case .send, .sendAfter, .segment: action = .fail(DownloadFailure(.interrupted, "the run was interrupted"))
                default: break
                }
            }
            switch action {
            case .send(let request):
                action = await perform(request, sink: sink)
            case .sendAfter(let request, let delay):
                let seconds = delay.draw()
                if let deadline, DispatchTime.now() + .nanoseconds(Int(seconds * 1e9)) > deadline {
                    action = machine.with { $0.deadlineExceeded(after: job.settings.deadline ?? 0) }
                    continue
                }
                guard await context.interruption.sleep(seconds) else {
                    action = .fail(DownloadFailure(.interrupted, "the run was interrupted"))
                    continue
                }
                machine.with { $0.waited(seconds) }
                action = await perform(request, sink: sink)
            case .verify, .verifyPartial:
                // A body just written was hashed on the way in; a partial completed in an
                // earlier run (416) is read back once.
                let written: (digests: [String: String], bytes: Int64)
                if action == .verify {
                    written = (sink.digests(), sink.flushedOffset)
                } else {
                    do {
                        written = try files.digests(of: files.partName, also: algorithms)
                    } catch {
                        return finish(failure: error)
                    }
                }
                switch verifyAndPublish(digests: written.digests, size: written.bytes, sink: sink) {
                case .published(let digests, let bytes):
                    return finish(published: (digests, bytes))
                case .next(let next):
                    action = next
                }
            case .notModified:
                var result = revalidating ?? JobResult(id: job.id, status: .upToDate, dest: job.dest.redacted)
                let state = machine.with { $0 }
                result.httpStatus = 304
                result.attempts = state.attempts
                result.url = state.servedURL
                result.mirrorIndex = state.mirrorIndex
                files.removePartial()
                return result.redacted(by: network.redactor)
            case .segment(let start):
                switch await performSegments(start, sink: sink) {
                case .published(let digests, let bytes):
                    return finish(published: (digests, bytes))
                case .next(let next):
                    action = next
                }
            case .fail(let failure):
                if failure.code == .sizeMismatch || failure.code == .checksumMismatch { files.removePartial() }
                return finish(failure: failure)
            case .receive:
                return finish(failure: DownloadFailure(.connection, "internal: body accepted without a request"))
            }
        }
    }

    /// Connections for one file: `segments: N`, or for `auto` 4 when the manifest gives a size of
    /// at least 64 MiB. A rate-limited run paces single streams instead (more connections
    /// cannot beat the limit).
    static func segmentCount(_ job: Job, rateLimited: Bool) -> Int {
        guard !rateLimited else { return 1 }
        switch job.settings.segments {
        case .count(let count): return count
        case .auto: return (job.size ?? 0) >= autoSegmentSize ? 4 : 1
        }
    }

    static let autoSegmentSize: Int64 = 64 << 20

    /// Range size for segments: each connection's share of the memory cap (2 MiB at least).
    ///
    /// A range never has to be cancelled: its connection's sink holds a whole range, and the next
    /// one is asked for only when it is written, so memory is bounded even when the disk is slower
    /// than the network — without the cancel that FoundationNetworking 6.3 can trap on when it
    /// races the end of a transfer (it did, about once in ten 1 GiB runs, with 16 MiB ranges cut at
    /// 2 MiB). Small ranges also keep the written prefix, which the hash follows, close behind.
    ///
    /// With a transport that has backpressure, memory does not depend on the range size: a
    /// quarter of each connection's share of the file (when the manifest gives its size), between
    /// 2 and 16 MiB, keeps the requests few and the hash close behind.
    static func pieceSize(memoryCap: Int, segments: Int, total: Int64?, backpressure: Bool) -> Int64 {
        let segments = Int64(max(1, segments))
        guard backpressure else { return max(2 << 20, Int64(memoryCap) / segments) }
        return total.map { min(16 << 20, max(2 << 20, $0 / (segments * 4))) } ?? 16 << 20
    }

    /// The HTTP request for `planned`: the job's method, headers and body, plus Range/If-Range.
    private func request(for planned: PlannedRequest) -> TransportRequest? {
        guard let url = URL(string: planned.url) else { return nil }
        var headers: [(name: String, value: String)] = []
        if let range = planned.rangeHeader {
            headers.append((name: "Range", value: range))
            if let ifRange = planned.ifRange { headers.append((name: "If-Range", value: ifRange)) }
        }
        if let etag = planned.ifNoneMatch { headers.append((name: "If-None-Match", value: etag)) }
        if let date = planned.ifModifiedSince { headers.append((name: "If-Modified-Since", value: date)) }
        return network.request(url, mirrorIndex: planned.mirrorIndex, method: job.method.rawValue, extra: headers,
                               body: job.body.map { Data($0.resolved.utf8) }, timeout: job.settings.timeout)
    }

    /// Runs a segmented transfer and returns what to do next: verify and publish, continue as one
    /// stream from the written prefix, or fail (disk errors, deadline, interruption).
    private func performSegments(_ start: DownloadStateMachine.SegmentStart, sink: FileSink) async -> Verdict {
        let state = machine.with { $0 }
        let connections = state.configuration.segments
        let transfer = SegmentedTransfer(.init(
            start: start, connections: connections, mirrorIndex: state.mirrorIndex, displayURL: state.servedURL,
            files: files, algorithms: algorithms, context: context, transport: network.transport, progress: progress,
            idleTimeout: job.settings.timeout,
            deadline: deadline,
            planner: .init(total: start.total, pieceSize: state.configuration.pieceSize,
                           ifRange: start.sidecar.ifRangeValue ?? "", retry: network.retry),
            request: { [self] range in
                request(for: PlannedRequest(mirrorIndex: state.mirrorIndex, url: start.url, rangeStart: range.lowerBound,
                                            rangeEnd: range.upperBound - 1, ifRange: start.sidecar.ifRangeValue))
            }))
        progress.moved(to: start.done.count, total: start.total)
        let outcome = await transfer.run()
        bytesTransferred += transfer.received
        segmentsUsed = connections
        switch outcome {
        case .complete(let digests):
            machine.with { $0.segmentsFinished(attempts: transfer.attempts) }
            return verifyAndPublish(digests: digests, size: start.total, sink: sink)
        case .stopped(let prefix, let failure):
            if Self.endsTheJob(failure) { return .next(.fail(failure)) }
            // From here one stream continues at the prefix; the sidecar must not promise more.
            var sidecar = start.sidecar
            sidecar.rangesDone = ByteRanges([0..<prefix])
            try? files.writeSidecar(sidecar)
            return .next(machine.with { $0.segmentsEnded(writtenThrough: prefix, failure: failure, attempts: transfer.attempts) })
        }
    }

    /// Failures no other request can cure.
    private static func endsTheJob(_ failure: DownloadFailure) -> Bool {
        [.deadlineExceeded, .interrupted, .diskFull, .permissionDenied, .ioError].contains(failure.code)
    }

    /// Sends one request and returns the machine's next action.
    private func perform(_ planned: PlannedRequest, sink: FileSink) async -> DownloadStateMachine.Action {
        guard let request = request(for: planned), let url = Optional(request.url) else {
            return .fail(DownloadFailure(.connection, "invalid URL \(planned.url)"))
        }
        var paced: Int64 = 0
        if let limiter = context.rateLimiter, let start = planned.rangeStart, let end = planned.rangeEnd {
            paced = end - start + 1
            await limiter.take(paced)
        }
        let files = self.files
        let machine = self.machine
        let progress = self.progress
        let handler = AttemptHandler(
            sink: sink, finishWithin: Int64(context.memoryCap), progress: progress,
            decide: { [deadline] head in
                machine.with { $0.headReceived(head, remaining: deadline.map { $0.seconds(since: .now()) }) }
            },
            begin: { plan in
                // Small files are cheaper to fetch again than to make resumable.
                if let sidecar = plan.sidecar, (sidecar.totalSize ?? plan.end ?? .max) > Self.resumableSize {
                    try? files.writeSidecar(sidecar)
                }
                progress.moved(to: plan.offset, total: machine.with { $0.totalSize })
                sink.begin(at: plan.offset, end: plan.end)
            })
        let host = url.host ?? ""
        await context.hosts.acquire(host)
        guard context.interruption.register(handler) else {
            await context.hosts.release(host)
            return .fail(DownloadFailure(.interrupted, "the run was interrupted"))
        }
        handler.attach(network.transport.start(request, handler: handler))
        let outcome = await handler.finished(idleTimeout: job.settings.timeout, deadline: deadline)
        context.interruption.unregister(handler)
        await context.hosts.release(host)
        bytesTransferred += outcome.received
        if let limiter = context.rateLimiter, outcome.received > paced { await limiter.charge(outcome.received - paced) }

        if let deadline, DispatchTime.now() >= deadline {
            return machine.with { $0.deadlineExceeded(after: job.settings.deadline ?? 0) }
        }
        guard let headAction = outcome.headAction else {
            return machine.with { $0.requestFailed(outcome.failure ?? .connection("no response"), remaining: remaining) }
        }
        guard case .receive = headAction else { return headAction }
        await sink.drain()
        let flushed = sink.flushedOffset
        let bodyOutcome: DownloadStateMachine.BodyOutcome
        if let failure = sink.writeFailure {
            bodyOutcome = .diskError(failure)
        } else if sink.bodyTooLong {
            bodyOutcome = .tooLong
        } else if outcome.overflow {
            bodyOutcome = .overflow
        } else if let failure = outcome.failure {
            bodyOutcome = .failed(failure)
        } else {
            bodyOutcome = .complete
        }
        return machine.with { $0.bodyFinished(bodyOutcome, flushed: flushed, remaining: remaining) }
    }

    /// Bodies up to this size get no sidecar: a partial without one is fetched again whole.
    static let resumableSize: Int64 = 4 << 20

    private var remaining: Double? {
        deadline.map { $0.seconds(since: .now()) }
    }

    private enum Verdict {
        case published(digests: [String: String], bytes: Int64)
        /// Not published: what to do instead (another mirror, or failure).
        case next(DownloadStateMachine.Action)
    }

    /// The first pinned checksum that `digests` do not match.
    private func mismatchedChecksum(_ digests: [String: String]) -> Checksum? {
        job.checksums.first { digests[$0.algorithm.rawValue] != $0.hex }
    }

    /// Checks size and checksums, and publishes when they hold.
    private func verifyAndPublish(digests: [String: String], size: Int64, sink: FileSink) -> Verdict {
        let state = machine.with { $0 }
        var problem: DownloadFailure?
        if let expected = job.size, expected != size {
            problem = DownloadFailure(.sizeMismatch, "got \(size) bytes, expected \(expected)")
        } else if let total = state.totalSize, total != size {
            problem = DownloadFailure(.sizeMismatch, "got \(size) bytes, the server announced \(total)")
        } else if let wrong = mismatchedChecksum(digests) {
            problem = DownloadFailure(
                .checksumMismatch,
                "\(wrong.algorithm.rawValue) is \(digests[wrong.algorithm.rawValue] ?? "?"), expected \(wrong.hex)")
        }
        if locked, var mismatch = problem, [.sizeMismatch, .checksumMismatch].contains(mismatch.code) {
            mismatch.code = .lockMismatch
            mismatch.message += " (from the lock)"
            problem = mismatch
        }
        if let problem {
            // The part is truncated by the next mirror's body, or removed when the job fails;
            // unlinking it here would leave the sink writing to a deleted file.
            return .next(machine.with { $0.verificationFailed(problem) })
        }
        do {
            if context.durability == .strict { try sink.sync() }
            try files.publish(durability: context.durability)
        } catch {
            return .next(.fail(error))
        }
        return .published(digests: digests, bytes: size)
    }

    /// The job's result: published with these digests and size, or failed with `failure`.
    private func finish(failure: DownloadFailure? = nil, published: (digests: [String: String], bytes: Int64)? = nil) -> JobResult {
        // A part the job never wrote to (it failed before any body) is no partial to keep.
        if failure != nil, files.partSize() == 0 { files.removePartial() }
        let state = machine.with { $0 }
        var result = JobResult(id: job.id, status: failure == nil ? .downloaded : .failed, dest: job.dest.redacted)
        if failure?.code == .interrupted { result.status = .interrupted }
        result.failure = failure
        result.mirrorIndex = state.mirrorIndex
        result.redirects = state.redirects
        result.url = state.servedURL
        result.attempts = state.attempts
        result.httpStatus = state.lastStatus
        result.resumedFrom = state.resumedFrom
        result.bytesTransferred = bytesTransferred
        result.segments = segmentsUsed
        if let published {
            context.state.record(
                job.dest.resolved, status: files.destStatus(), digests: published.digests,
                urlSHA256: copyFrom == nil ? state.configuration.mirrors[state.mirrorIndex].identity : nil,
                etag: state.etag, lastModified: state.lastModified)
            result.size = published.bytes
            result.checksums = published.digests
            result.checksumVerified = job.checksums.isEmpty ? nil : true
            result.etag = state.etag
            result.lastModified = state.lastModified
        }
        return result.redacted(by: network.redactor)
    }
}

/// The state machine behind a lock: the transport's delivery queue decides on response heads
/// while the downloader's task handles everything else.
final class MachineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var machine: DownloadStateMachine

    init(_ machine: DownloadStateMachine) {
        self.machine = machine
    }

    func with<T>(_ body: (inout DownloadStateMachine) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&machine)
    }
}
