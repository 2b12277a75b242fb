import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Carries out one job: asks the ``DestinationCheck`` whether `dest` is already up to date,
/// takes a twin job's file when one fetched the same URL, or runs the ``DownloadStateMachine``
/// and performs the actions it returns — requests, waits, segmented transfers, verification
/// against the ``ContentExpectation``s and the atomic publish — and records what it verified in
/// the state cache. It decides nothing itself: the machine, the ``TransferPolicy`` and the
/// job's ``JobNetwork`` do.
struct JobDownloader: Sendable {
    private let job: Job
    private let context: Context
    private let progress: JobProgress
    /// A published file with the same content (a twin job's), to link or copy instead of fetching.
    private let copyFrom: SameContent.Source?
    /// What the content must be: the manifest's size and checksums, or the lock's (`run
    /// --locked`, where a difference is a `lock_mismatch`).
    private let expectation: ContentExpectation
    private let destination: DestinationCheck
    private let files: PartialFiles
    /// Transport, credentials, redirect and retry policies, redaction. Made when the job first
    /// needs the network: a job whose file is up to date (a rerun's every job) never does, and
    /// making it (its mirrors' URLs parsed, its headers and redactor built) was a tenth of an
    /// up-to-date rerun's time.
    private lazy var network = JobNetwork(job: job, transport: context.transport, perHost: context.perHost,
                                          environment: context.environment)
    /// The state machine behind a lock: the transport's delivery queue decides on response
    /// heads while the downloader's task handles everything else. Made with ``network``.
    private lazy var machine = NIOLockedValueBox(DownloadStateMachine(configuration: .init(
        mirrors: network.mirrors.compactMap { $0 }, expectedSize: job.size, checksumPinned: !job.checksums.isEmpty,
        retry: network.retry, redirect: network.redirect,
        transfer: TransferPolicy(job: job, memoryCap: context.memoryCap, rateLimiter: context.rateLimiter,
                                 backpressure: network.transport.hasBackpressure, perHost: context.perHost,
                                 rangeSize: context.segmentRangeSize))))
    private let started = DispatchTime.now()
    private let deadline: ContinuousClock.Instant?
    /// The file at `dest` as found at the start: what a 304 confirms.
    private var revalidating: JobResult?
    private var bytesTransferred: Int64 = 0
    /// Connections used by a segmented transfer, for the report.
    private var segmentsUsed: Int?
    /// What segmented transfers did, for the report (Docs/Mirrors.md).
    private var piecesRepaired = 0
    private var hedged = 0
    private var mirrorsUsed: [Int]?
    /// The mirror that served most bytes of a download from several, and its URL.
    private var busiest: (index: Int, url: String)?
    private var warnings: [String] = []
    /// The archive being unpacked while it downloads (`extract:` of a tar or a compressed file,
    /// read in order as one stream or a segmented transfer's prefix makes it final), when it is.
    private var streaming: StreamingExtraction?
    /// The signature check of a job with `signature:` (a checksum file), before its file is
    /// published or, up to date, believed.
    private let gate: SignatureGate?
    /// What the gate verified of the file just published.
    private var verified: SignatureCheck.Verified?

    init(job: Job, context: Context, progress: JobProgress? = nil, copyFrom: SameContent.Source? = nil, locked: Bool = false) {
        self.job = job
        self.context = context
        self.progress = progress ?? JobProgress(total: job.size)
        self.copyFrom = copyFrom
        expectation = ContentExpectation(job: job, locked: locked)
        destination = DestinationCheck(job: job, root: context.root, state: context.state, listings: context.listings)
        files = destination.files
        gate = job.signature.map { SignatureGate(rule: $0) }
        deadline = job.settings.deadline.map { .now + .seconds($0) }
    }

    mutating func run() async -> JobResult {
        var (source, result) = await fetch()
        if gate != nil, result.status == .upToDate { result = await confirmSignature(of: result) }
        if source != .keptTree, let extract = job.extract, result.status == .downloaded || result.status == .upToDate {
            result = await unpack(result, extract)
        } else if let streaming {
            await streaming.cancel()
        }
        result.duration = DispatchTime.now().seconds(since: started)
        return result
    }

    // MARK: - Archives

    private func extraction(_ extract: Extract) -> ArchiveExtraction {
        ArchiveExtraction(extract: extract, root: context.root, state: context.state, archiveName: job.dest.redacted,
                          progress: progress)
    }

    /// `keep_archive: false`, and the archive gone since an earlier run unpacked it: the job is
    /// up to date while the tree recorded from that archive (its pinned sha256, else from this
    /// URL) is whole. Nil when it must be fetched again (`refresh: always`, another archive, a
    /// changed tree). `refresh: if-changed` cannot ask the server without the archive's
    /// validators at hand and counts as `never` here (Docs/Archives.md).
    private mutating func treeWithoutArchive(_ extract: Extract) -> JobResult? {
        guard !extract.keepArchive, job.settings.refresh != .always, files.destStatus() == nil else { return nil }
        let pinned = job.checksums.first { $0.algorithm == .sha256 }?.hex
        let url = pinned == nil ? network.mirrors.first.flatMap { $0?.identity } : nil
        let extraction = extraction(extract)
        guard let tree = extraction.intactTree(archiveSHA256: pinned, urlSHA256: url) else { return nil }
        var result = JobResult(id: job.id, status: .upToDate, dest: job.dest.redacted)
        result.checksums = ["sha256": tree.archiveSHA256]
        result.extracted = extraction.report(tree)
        return result
    }

    /// Makes `into` the tree of the archive the job just verified (downloaded, or up to date)
    /// — the file at `dest` must still be that archive — and removes the archive with
    /// `keep_archive: false`. A failure fails the job and leaves `into` as it was; the verified
    /// archive stays.
    private mutating func unpack(_ result: JobResult, _ extract: Extract) async -> JobResult {
        var result = result
        let url = network.mirrors.first.flatMap { $0?.identity }
        if let streaming {
            self.streaming = nil
            if let streamed = await installStreamed(streaming, result, extract, url: url) {
                result.extracted = streamed
                if !extract.keepArchive { files.removeDest() }
                return result
            }
        }
        do throws(BatchFetchError) {
            let archive = try files.openDest()
            defer { close(archive) }
            var status = stat()
            guard fstat(archive, &status) == 0 else { throw FileSink.failure(errno, "cannot read \(files.destPath)") }
            let verified = result.checksums["sha256"]
            let sha256 = context.state.entry(for: job.dest.resolved, status: status)?.digests["sha256"] ?? Self.sha256(of: archive)
            guard let sha256, verified == nil || sha256 == verified else {
                throw BatchFetchError(.ioError, "\(job.dest.redacted) changed after it was verified; not unpacked")
            }
            result.extracted = try extraction(extract).ensure(archive: archive, size: Int64(status.st_size),
                                                              archiveSHA256: sha256, urlSHA256: url)
            if !extract.keepArchive { files.removeDest() }
        } catch {
            result.status = .failed
            result.failure = error
        }
        return result
    }

    /// The tree the archive made while it downloaded, swapped in now that it verified; nil when
    /// there is none to take (the unpacking gave up or failed — a body started again below what
    /// it had read, say): the archive is then unpacked after verification as without streaming — the
    /// same checks, the same failures. A tree already whole from this archive is kept instead.
    private func installStreamed(_ streaming: StreamingExtraction, _ result: JobResult, _ extract: Extract,
                                 url: String?) async -> Extraction? {
        guard result.status == .downloaded, let size = result.size, let sha256 = result.checksums["sha256"],
              case .success(let unpacked) = await streaming.result(size: size) else {
            await streaming.cancel()
            return nil
        }
        let extraction = extraction(extract)
        if let intact = extraction.intactTree(archiveSHA256: sha256, urlSHA256: nil) {
            extraction.discard(unpacked)
            return extraction.report(intact)
        }
        guard let tree = try? extraction.install(unpacked, archiveSHA256: sha256, urlSHA256: url) else { return nil }
        var report = extraction.report(tree)
        report.streamed = true
        return report
    }

    private static func sha256(of descriptor: Int32) -> String? {
        (try? Digester.digests(ofDescriptor: descriptor))?.digests["sha256"]
    }

    /// Gathers what ``ContentSourcing`` decides from — the tree kept without its archive, the
    /// file at `dest`, a twin, the sha256 the cache or hash mirrors may know — and takes the
    /// sources it names in order: the first that gives a result ends the job (returned with
    /// it). Validation
    /// refuses a URL that does not parse; a library caller that built the job by hand may not
    /// have, and the machine's mirrors are only those that parse (a file already up to date
    /// needed no URL).
    private mutating func fetch() async -> (ContentSourcing.Source, JobResult) {
        let keptTree = job.extract.flatMap { treeWithoutArchive($0) }
        let verdict = keptTree == nil ? destination.verdict() : .fetch
        // A signed file comes from its own servers, where its signature is.
        var facts = ContentSourcing.Facts(keptTree: keptTree != nil, twin: copyFrom != nil && gate == nil,
                                          cache: context.cache != nil && gate == nil,
                                          hashMirrors: !context.hashMirrors.isEmpty && gate == nil)
        switch verdict {
        case .upToDate: facts.destination = .upToDate
        case .revalidate: facts.destination = .revalidate
        case .fetch: facts.destination = .fetch
        }
        if !facts.keptTree, facts.destination != .upToDate,
           let invalid = zip(job.urls, network.mirrors).first(where: { $0.1 == nil })?.0 {
            return (.origins, JobResult(failed: job, BatchFetchError(.connection, "invalid URL \(invalid.redacted)")))
        }
        if ContentSourcing.asksByContent(facts) {
            // Pinned, or known to the cache through another pinned algorithm (then only a hint:
            // the copy is hashed and held to the job's own checksums).
            facts.sha256 = context.cache?.sha256(of: job) ?? job.checksums.first { $0.algorithm == .sha256 }?.hex
            facts.partial = facts.hashMirrors && facts.sha256 != nil && files.local() != nil
        }
        for source in ContentSourcing.sources(facts) {
            switch source {
            case .keptTree:
                if let keptTree { return (source, keptTree) }
            case .destination:
                guard case .upToDate(let upToDate) = verdict else { continue }
                files.removePartLinkedToDest()
                return (source, upToDate)
            case .revalidate:
                guard case .revalidate(let local, let etag, let lastModified) = verdict else { continue }
                revalidating = local
                machine.withLockedValue { $0.revalidate(etag: etag, lastModified: lastModified) }
                return (source, await download())
            case .twin:
                guard let copyFrom else { continue }
                return (source, copy(from: copyFrom))
            case .cache(let sha256):
                if let cache = context.cache, let result = publish(fromCache: cache, sha256: sha256) { return (source, result) }
            case .hashMirrors(let sha256):
                if let result = await fetchFromHashMirrors(sha256: sha256) { return (source, result) }
            case .origins:
                return (source, await download())
            }
        }
        return (.origins, await download())
    }

    // MARK: - Hash mirrors

    /// Asks the hash mirrors for the content by its sha256, in order, before the job's own
    /// URLs: a job of its own (the same dest, size, checksums and settings; the templates
    /// filled in as its mirrors) that goes through everything a download does — redirects,
    /// retries, verification, the atomic publish, the cache. None of the job's headers go to
    /// a hash mirror: they were written for the job's own servers, and a team's mirror is
    /// another party (its credentials go in its URL template, `${VAR}`, or `.netrc`). A miss
    /// (404) or a body that fails the hash moves on to the job's own URLs; what the hash mirror
    /// left of a part is removed first. (A job with a partial of its own is not sent here:
    /// ``ContentSourcing``.)
    private func fetchFromHashMirrors(sha256: String) async -> JobResult? {
        var mirrorJob = job
        mirrorJob.urls = context.hashMirrors.map {
            $0.replacing("{sha256}", with: sha256).replacing("{sha256_2}", with: String(sha256.prefix(2)))
        }
        mirrorJob.headers = []
        var mirrorContext = context
        mirrorContext.hashMirrors = []
        var downloader = JobDownloader(job: mirrorJob, context: mirrorContext, progress: progress)
        var result = await downloader.run()
        guard result.status == .downloaded else {
            files.removePartial()
            return nil
        }
        result.source = .hashMirror
        return result
    }

    // MARK: - Content cache

    /// Publishes the job from the content cache when it has `sha256` (the job's pinned digest):
    /// no request. The entry is copied into an unnamed part (a reflink where the file system
    /// can), held to the job's expectations (other pinned algorithms are hashed from the copy)
    /// and published like a download. Nil when the cache does not have it or anything goes
    /// wrong: the job then downloads.
    private func publish(fromCache cache: ContentCache, sha256: String) -> JobResult? {
        guard let file = cache.file(sha256: sha256) else { return nil }
        do throws(BatchFetchError) {
            let digests: [String: String]
            let status: stat?
            if context.cacheLink == .hardlink,
               let linked = try publishLink(to: file, sha256: sha256) {
                (digests, status) = linked
                cache.linked(file)
            } else {
                let output = try files.openPart(unnamed: true)
                defer { close(output) }
                try FileCopy.copy(from: file.descriptor, to: output, names: (file.path, files.partPath))
                guard file.isUnchanged else { throw BatchFetchError(.ioError, "\(file.path) changed while it was copied") }
                digests = algorithms.isEmpty ? ["sha256": sha256] : try files.partDigests(also: algorithms).digests
                if let failure = expectation.mismatch(size: file.size, digests: digests) { throw failure }
                status = try files.publish(durability: context.durability)
            }
            context.state.record(job.dest.resolved, status: status, digests: digests, urlSHA256: nil, etag: nil, lastModified: nil)
            var result = JobResult(id: job.id, status: .downloaded, dest: job.dest.redacted)
            result.size = file.size
            result.checksums = digests
            result.checksumVerified = true
            result.source = .cache
            return result
        } catch {
            files.removePartial()
            return nil
        }
    }

    /// `cache_link: hardlink`: `dest` becomes a hard link to the entry, once the entry is held
    /// to the job's expectations (other pinned algorithms hashed from it). Nil when no link
    /// can be made (another file system): the caller copies.
    private func publishLink(to file: ContentCache.File, sha256: String) throws(BatchFetchError) -> (digests: [String: String], status: stat?)? {
        var digests = ["sha256": sha256]
        if !algorithms.isEmpty {
            do {
                digests = try Digester.digests(ofDescriptor: file.descriptor, also: algorithms).digests
            } catch {
                throw BatchFetchError(.ioError, "cannot read \(file.path): \(error)")
            }
        }
        if let failure = expectation.mismatch(size: file.size, digests: digests) { throw failure }
        guard file.isUnchanged,
              let status = try files.publishLink(of: file.name, in: file.directory, expecting: file.inode,
                                                 durability: context.durability) else { return nil }
        return (digests, status)
    }

    /// Enters a file the job just published (`status` as published) into the content cache,
    /// copied from `dest` while it is still that file.
    private func enterCache(_ cache: ContentCache, digests: [String: String], status: stat) {
        guard let input = try? files.openDest() else { return }
        defer { close(input) }
        cache.insert(digests: digests, from: input, verified: status, name: files.destPath)
    }

    private var algorithms: DigestAlgorithms { destination.algorithms }

    /// Whether what the job finds on disk as it starts is small enough to check or resume on
    /// an event loop: a known size (the runner placed the job by it), or nothing larger than
    /// ``EventLoopTaskExecutor/smallJobLimit`` at `dest` (which the up-to-date check may hash)
    /// or at `<dest>.part` (which a resume reads back).
    var startsSmall: Bool {
        job.size != nil || files.holdsAtMost(EventLoopTaskExecutor.smallJobLimit)
    }

    // MARK: - Same content

    /// Takes a twin job's published file: a hard link (a copy across file systems or where links
    /// are refused), verified like a download, published the same way.
    private mutating func copy(from source: SameContent.Source) -> JobResult {
        do throws(BatchFetchError) {
            try files.takePart(from: PartialFiles(root: context.root, dest: source.dest))
            let (digests, size) = try files.partDigests(also: algorithms)
            if var failure = expectation.mismatch(size: size, digests: digests) {
                failure.message = "job '\(source.id)' fetched the same URL: \(failure.message)"
                throw failure
            }
            let status = try files.publish(durability: context.durability)
            var result = finish(published: (digests, size, status))
            result.copiedFrom = source.id
            return result
        } catch {
            files.removePartial()
            return finish(failure: error)
        }
    }

    // MARK: - Download

    /// The action loop: performs what the machine asks until the job is published or failed.
    private mutating func download() async -> JobResult {
        let sink: FileSink
        do {
            // A signed file's part has a name, for the signature tools to read.
            let unnamed = gate == nil && machine.withLockedValue { $0.configuration.transfer }.keepsPartUnnamed(expectedSize: job.size)
            let files = files
            let part = try files.openPart(unnamed: unnamed)
            if let extract = job.extract, extract.format != .zip {
                streaming = StreamingExtraction(extraction: extraction(extract), descriptor: part, written: 0, expectedSize: job.size)
            }
            var onWrite: (@Sendable (Int64) -> Void)?
            var onBodyStart: (@Sendable (Int64) -> Void)?
            if let stream = streaming?.stream {
                onWrite = { stream.wrote(through: $0) }
                onBodyStart = { stream.bodyStarts(at: $0) }
            }
            sink = FileSink(descriptor: part, partPath: files.partPath, algorithms: algorithms,
                            writeSize: context.writeSize, memoryCap: context.memoryCap, onWrite: onWrite, onBodyStart: onBodyStart,
                            writeRate: context.simulatedDiskRate, expectedSize: job.size, startsEmpty: files.partIsUnnamed)
        } catch {
            return finish(failure: error)
        }
        var next = Next.act(machine.withLockedValue { $0.start(local: files.local()) })
        while true {
            switch next {
            case .act(let action): next = await perform(action, sink: sink)
            case .done(let result): return result
            }
        }
    }

    /// What an action leads to: the machine's next action, or the job's result.
    private enum Next {
        case act(Action)
        case done(JobResult)
    }

    /// Carries out one action of the machine.
    private mutating func perform(_ action: Action, sink: FileSink) async -> Next {
        if context.interruption.isInterrupted {
            switch action {
            case .send, .sendAfter, .segment: return .act(.fail(BatchFetchError(.interrupted, "the run was interrupted")))
            default: break
            }
        }
        switch action {
        case .send(let request):
            return .act(await send(request, sink: sink))
        case .sendAfter(let request, let delay):
            // The retry policy never returns a wait past the deadline.
            let wait = Duration.seconds(delay.draw())
            guard await context.interruption.sleep(wait) else {
                return .act(.fail(BatchFetchError(.interrupted, "the run was interrupted")))
            }
            machine.withLockedValue { $0.waited(wait.inSeconds) }
            return .act(await send(request, sink: sink))
        case .verify:
            // The body just written was hashed on the way in.
            return await verifyAndPublish(digests: sink.digests(), size: sink.flushedOffset, sink: sink)
        case .verifyPartial:
            // A partial completed in an earlier run (416) is read back once, on the pool: it may
            // be large, and the job may run on an event loop.
            do {
                let (files, algorithms) = (self.files, self.algorithms)
                let (digests, size) = try await withTaskExecutorPreference(globalConcurrentExecutor) { () throws(BatchFetchError) in
                    try files.partDigests(also: algorithms)
                }
                return await verifyAndPublish(digests: digests, size: size, sink: sink)
            } catch {
                return .act(.fail(error))
            }
        case .segment(let start):
            // The first piece was drained when it finished (``send(_:sink:)``); its sink idles now.
            sink.releaseBuffers()
            return await performSegments(start, sink: sink)
        case .notModified:
            var result = revalidating ?? JobResult(id: job.id, status: .upToDate, dest: job.dest.redacted)
            let state = machine.withLockedValue { $0 }
            result.httpStatus = 304
            result.attempts = state.attempts
            result.url = state.servedURL
            result.mirrorIndex = state.mirrorIndex
            files.removePartial()
            return .done(result.redacted(by: network.redactor))
        case .fail(let failure):
            if [.sizeMismatch, .checksumMismatch, .signatureInvalid].contains(failure.code) { files.removePartial() }
            return .done(finish(failure: failure))
        }
    }

    /// Runs a segmented transfer and returns what to do next: verify and publish, continue as one
    /// stream from the written prefix, or fail (disk errors, deadline, interruption). With
    /// `sources: all` and proof of one content its connections are dealt over the current mirror
    /// and the later ones (Docs/Mirrors.md).
    private mutating func performSegments(_ start: DownloadStateMachine.SegmentStart, sink: FileSink) async -> Next {
        let state = machine.withLockedValue { $0 }
        let network = self.network
        let proven = expectation.pinsSHA256 || job.pieces != nil
        let (indices, warning) = start.repair.isEmpty
            ? TransferPolicy.sourceMirrors(state.oneMirrorOnly ? .first : job.settings.sources, current: state.mirrorIndex,
                                           count: network.mirrors.count, proven: proven)
            : (TransferPolicy.repairMirrors(current: state.mirrorIndex, count: network.mirrors.count), nil)
        if let warning, !warnings.contains(warning) { warnings.append(warning) }
        func segmentMirror(_ index: Int) -> SegmentedTransfer.Mirror? {
            guard let mirror = network.mirrors[index] else { return nil }
            let current = index == state.mirrorIndex
            let url = current ? start.url : mirror.url
            return SegmentedTransfer.Mirror(index: index, url: url, redirects: current ? state.redirects.count : 0,
                                            displayURL: current ? state.servedURL : mirror.printed, host: url.host ?? "")
        }
        let mirrors = indices.compactMap(segmentMirror)
        let hedgeMirror = context.hedging && start.repair.isEmpty
            ? TransferPolicy.hedgeMirror(drawnFrom: indices, count: network.mirrors.count, proven: proven && !state.oneMirrorOnly)
                .flatMap(segmentMirror)
            : nil
        let connections = TransferPolicy.connections(segments: state.configuration.transfer.segments,
                                                     hosts: Set(mirrors.map(\.host)).count, perHost: context.perHost)
        // Segments write the part out of order; an unpacking follows their written prefix.
        let stream = streaming?.stream
        var followPrefix: (@Sendable (Int64) -> Void)?
        if let stream { followPrefix = { stream.wrote(through: $0) } }
        let current = state.mirrorIndex
        let transfer = SegmentedTransfer(.init(
            start: start, connections: connections, mirrors: mirrors, perHost: context.perHost,
            files: files, algorithms: algorithms, context: context, transport: network.transport, progress: progress,
            idleTimeout: .seconds(job.settings.timeout),
            deadline: deadline,
            planner: .init(total: start.total, pieceSize: state.configuration.transfer.pieceSize,
                           // The sidecar's validator is the current mirror's; a repair elsewhere learns its own.
                           ifRange: mirrors.first?.index == current ? start.sidecar.ifRangeValue ?? "" : "",
                           retry: network.retry, mirrors: mirrors.map(\.index),
                           pieces: job.pieces.flatMap { $0.fits(start.total) ? $0 : nil },
                           minimumSteal: TransferPolicy.minimumSteal(pieceSize: state.configuration.transfer.pieceSize,
                                                                     backpressure: network.transport.hasBackpressure),
                           hedge: context.hedging ? SegmentPlanner.HedgeRule() : nil, badBefore: start.repair,
                           sizePinned: expectation.size != nil, hedgeMirror: hedgeMirror?.index),
            request: { range, mirror, url, ifRange in
                network.request(for: PlannedRequest(mirrorIndex: mirror, url: url, rangeStart: range.lowerBound,
                                                    rangeEnd: range.upperBound - 1, ifRange: ifRange))
            },
            redirect: network.redirect, hedgeMirror: hedgeMirror,
            followPrefix: followPrefix))
        progress.moved(to: start.done.count, total: start.total)
        // On the pool: a large file's connections and its hash, never on an event loop.
        let outcome = await withTaskExecutorPreference(globalConcurrentExecutor) { await transfer.run() }
        bytesTransferred += transfer.received
        segmentsUsed = connections
        let planner = transfer.planner
        piecesRepaired += planner.piecesRepaired
        hedged += planner.hedged
        let every = transfer.setup.everyMirror
        for (mirror, failure) in planner.dropped.sorted(by: { $0.key < $1.key }) where every.count > 1 {
            let url = every.first { $0.index == mirror }?.displayURL ?? ""
            warnings.append("mirror \(mirror) (\(url)) dropped for this job: \(failure.message)")
        }
        // The file is this transfer's: an earlier one's mix was fetched again.
        let used = every.map(\.index).filter { (planner.servedBy[$0]?.count ?? 0) > 0 }
        mirrorsUsed = used.count > 1 ? used : nil
        busiest = used.count > 1 ? every.first { $0.index == planner.busiestMirror }.map { ($0.index, $0.displayURL) } : nil
        switch outcome {
        case .complete(let digests):
            machine.withLockedValue { $0.segmentsFinished(attempts: transfer.attempts, mixed: used.count > 1) }
            return await verifyAndPublish(digests: digests, size: start.total, sink: sink, piecesChecked: true)
        case .stopped(let prefix, let failure):
            if Self.endsTheJob(failure) { return .act(.fail(failure)) }
            // From here one stream continues at the prefix; the sidecar must not promise more.
            var sidecar = start.sidecar
            sidecar.rangesDone = ByteRanges([0..<prefix])
            sidecar.rangesFrom = nil
            try? files.writeSidecar(sidecar)
            return .act(machine.withLockedValue { $0.segmentsEnded(writtenThrough: prefix, failure: failure, attempts: transfer.attempts) })
        }
    }

    /// Failures no other request can cure.
    private static func endsTheJob(_ failure: BatchFetchError) -> Bool {
        [.deadlineExceeded, .interrupted, .diskFull, .permissionDenied, .ioError].contains(failure.code)
    }

    /// Sends one request and returns the machine's next action.
    private mutating func send(_ planned: PlannedRequest, sink: FileSink) async -> Action {
        let request = network.request(for: planned)
        var paced: Int64 = 0
        if let limiter = context.rateLimiter, let start = planned.rangeStart, let end = planned.rangeEnd {
            paced = end - start + 1
            await limiter.take(paced)
        }
        let (files, machine, progress, deadline) = (self.files, self.machine, self.progress, self.deadline)
        let handler = AttemptHandler<DownloadStateMachine.AfterHead>(
            sink: sink, finishWithin: Int64(context.memoryCap), progress: progress,
            decide: { head in
                let decision = machine.withLockedValue { $0.headReceived(head, remaining: deadline.map { ($0 - .now).inSeconds }) }
                if case .receive(let plan) = decision {
                    if let sidecar = plan.sidecar, (sidecar.totalSize ?? plan.end ?? .max) > TransferPolicy.resumableSize {
                        try? files.writeSidecar(sidecar)
                    }
                    progress.moved(to: plan.offset, total: machine.withLockedValue { $0.totalSize })
                    sink.begin(at: plan.offset, end: plan.end)
                }
                return decision
            })
        let outcome = await Exchange.perform(
            request, handler: handler, transport: network.transport, hosts: context.hosts,
            interruption: context.interruption, idleTimeout: .seconds(job.settings.timeout), deadline: deadline)
        guard let outcome else { return .fail(BatchFetchError(.interrupted, "the run was interrupted")) }
        bytesTransferred += outcome.received
        if let limiter = context.rateLimiter, outcome.received > paced { await limiter.charge(outcome.received - paced) }

        if let deadline, .now >= deadline {
            return machine.withLockedValue { $0.deadlineExceeded(after: job.settings.deadline ?? 0) }
        }
        switch outcome.decision {
        case nil:
            return machine.withLockedValue { $0.requestFailed(outcome.failure ?? .connection("no response"), remaining: remaining) }
        case .next(let next)?:
            return next
        case .receive?:
            await sink.drain()
            let (end, flushed) = (outcome.bodyEnd(sink: sink), sink.flushedOffset)
            return machine.withLockedValue { $0.bodyFinished(end, flushed: flushed, remaining: remaining) }
        }
    }

    private var remaining: Double? {
        deadline.map { ($0 - .now).inSeconds }
    }

    /// Checks size and checksums against the expectations — the manifest's (or the lock's), then
    /// the size and sha256 the server announced — and the signature of a signed job, and
    /// publishes when they hold. A body that arrived whole (`piecesChecked` false) is held to
    /// the job's piece hashes too, when its digest failed or no sha256 is pinned: bad pieces
    /// alone are fetched again (``checkPieces(_:size:)``).
    private mutating func verifyAndPublish(digests: [String: String], size: Int64, sink: FileSink,
                                           piecesChecked: Bool = false) async -> Next {
        let (total, sha256, contentType, served) = machine.withLockedValue { ($0.totalSize, $0.announcedSHA256, $0.contentType, $0.servedURL) }
        let html = HTMLGuard(job: job)
        if html.applies, let page = html.failure(contentType: contentType, prefix: files.partPrefix(HTMLGuard.sniffLength), served: served) {
            return .act(machine.withLockedValue { $0.verificationFailed(page) })
        }
        let announced = ContentExpectation(size: total, checksums: sha256.map { [Checksum(algorithm: .sha256, hex: $0)] } ?? [],
                                           authority: .server)
        var mismatch = ContentExpectation.firstMismatch([expectation, announced], size: size, digests: digests)
        if !piecesChecked, let pieces = job.pieces, pieces.fits(size),
           mismatch.map({ [.checksumMismatch, .lockMismatch].contains($0.code) }) ?? !expectation.pinsSHA256 {
            switch await checkPieces(pieces, size: size) {
            case .repair(let action): return .act(action)
            case .bad(let failure): mismatch = mismatch ?? failure
            case .good: break
            }
        }
        if let problem = mismatch {
            // The part is truncated by the next mirror's body, or removed when the job fails;
            // unlinking it here would leave the sink writing to a deleted file.
            return .act(machine.withLockedValue { $0.verificationFailed(problem) })
        }
        if let gate {
            let mirror = machine.withLockedValue { $0.mirrorIndex }
            switch await gate.verify(fileAt: files.partPath, mirrors: [mirror], probe: MirrorProbe(job: job, network: network, hosts: context.hosts)) {
            case .success(let verified): self.verified = verified
            case .failure(let failure): return .act(machine.withLockedValue { $0.verificationFailed(failure) })
            }
        }
        let status: stat?
        do {
            if context.durability == .strict { try sink.sync() }
            status = try files.publish(durability: context.durability)
        } catch {
            return .act(.fail(error))
        }
        return .done(finish(published: (digests, size, status)))
    }

    /// What the pieces of a body that arrived whole say.
    private enum PieceCheck {
        case good
        /// Some are bad: fetch them again (the machine's segment action).
        case repair(Action)
        /// Bad, and not to be repaired: every piece (another file), or a repair already made.
        case bad(BatchFetchError)
    }

    /// Hashes each piece of the part (on the pool: it may be large) against the job's piece
    /// hashes; a part with some bad pieces has them fetched again alone (Docs/Mirrors.md).
    private mutating func checkPieces(_ pieces: PieceHashes, size: Int64) async -> PieceCheck {
        let files = files
        let hashes: [String]? = await withTaskExecutorPreference(globalConcurrentExecutor) {
            guard let descriptor = try? files.openPart() else { return nil }
            defer { close(descriptor) }
            // A piece read short is no match ("").
            return try? (0..<pieces.count(for: size)).map {
                try Digester.sha256(ofDescriptor: descriptor, in: pieces.range(of: $0, total: size)) ?? ""
            }
        }
        // Unreadable, the part proves nothing: it fails as a whole.
        guard let hashes else { return .bad(BatchFetchError(.ioError, "cannot read \(files.partPath) to check its pieces")) }
        let bad = hashes.indices.filter { hashes[$0] != pieces.sha256[$0] }
        guard !bad.isEmpty else { return .good }
        let failure = BatchFetchError(.checksumMismatch, "\(bad.count) of \(hashes.count) pieces do not match their sha256")
        guard bad.count < hashes.count else { return .bad(failure) }
        var done = ByteRanges([0..<size])
        for index in bad { done.remove(pieces.range(of: index, total: size)) }
        let records = bad.map { AttemptRecord.Piece(index: $0, bytes: pieces.range(of: $0, total: size)) }
        guard let action = machine.withLockedValue({ $0.piecesBad(records, done: done) }) else { return .bad(failure) }
        piecesRepaired += bad.count
        return .repair(action)
    }

    /// The job's result: published with these digests and size (and the file's status as
    /// published), or failed with `failure`.
    private mutating func finish(failure: BatchFetchError? = nil,
                        published: (digests: [String: String], bytes: Int64, status: stat?)? = nil) -> JobResult {
        // A part the job never wrote to (it failed before any body) is no partial to keep.
        if failure != nil, files.partSize() == 0 { files.removePartial() }
        let state = machine.withLockedValue { $0 }
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
        result.piecesRepaired = piecesRepaired
        result.hedged = hedged
        result.mirrorsUsed = mirrorsUsed
        result.warnings = warnings
        if let busiest, failure == nil {
            result.mirrorIndex = busiest.index
            result.url = busiest.url
        }
        if let published {
            context.state.record(
                job.dest.resolved, status: published.status, digests: published.digests,
                urlSHA256: copyFrom == nil ? state.configuration.mirrors[state.mirrorIndex].identity : nil,
                etag: state.etag, lastModified: state.lastModified)
            result.size = published.bytes
            result.checksums = published.digests
            result.checksumVerified = job.checksums.isEmpty ? nil : true
            result.etag = state.etag
            result.lastModified = state.lastModified
            result.source = copyFrom == nil ? .network : .link
            if let verified {
                result.signedBy = verified.signer
                result.signedText = verified.signedText
                if let sha256 = published.digests["sha256"] { context.state.recordSigner(verified.signer, of: job.dest.resolved, sha256: sha256) }
            }
            if let cache = context.cache, let status = published.status {
                enterCache(cache, digests: published.digests, status: status)
            }
        }
        return result.redacted(by: network.redactor)
    }

    /// An up-to-date signed file, believed only with a verified signature: the one a run
    /// recorded for this content by a key the manifest still accepts (no request), else its
    /// signature checked again now — from the first mirror that serves one. A file that fails
    /// stays where it is (it was there before this run) and the job fails `signature_invalid`.
    private mutating func confirmSignature(of upToDate: JobResult) async -> JobResult {
        guard let gate else { return upToDate }
        var result = upToDate
        let path = files.destPath
        // The destination check hashed the file, or found its digests recorded, to call it up to date.
        let sha256 = upToDate.checksums["sha256"] ?? Runner.fileSHA256(path)
        if !gate.check.carriesItsSignature(path), let signer = context.state.signer(of: job.dest.resolved, sha256: sha256),
           gate.check.rule.accepts(signer) {
            result.signedBy = signer
            return result
        }
        let probe = MirrorProbe(job: job, network: network, hosts: context.hosts)
        switch await gate.verify(fileAt: path, mirrors: Array(job.urls.indices), probe: probe) {
        case .success(let verified):
            context.state.recordSigner(verified.signer, of: job.dest.resolved, sha256: sha256)
            result.signedBy = verified.signer
            result.signedText = verified.signedText
            return result
        case .failure(let failure):
            return JobResult(failed: job, failure).redacted(by: network.redactor)
        }
    }

    private typealias Action = DownloadStateMachine.Action
}
