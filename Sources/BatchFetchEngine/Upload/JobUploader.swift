import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// Carries out one upload job: opens the file beneath the output directory (never through a
/// symlink), takes its digests (from the state cache when the file is unchanged, else one pass
/// over it), asks the target whether it already holds the file (`PUT`, unless `refresh:
/// always`), then sends it — `PUT` with the file as the body, or `POST` as a multipart form —
/// with `Content-Digest` (and `Content-MD5` when asked), following redirects and retrying as
/// ``UploadRules`` and the job's ``JobNetwork`` say. It never writes beneath the output
/// directory: it records the state cache's note of what it uploaded where (for the next run's
/// `up_to_date`), and with a content cache the file sent enters it. The decisions live in
/// ``UploadRules``; this type only performs them.
struct JobUploader: Sendable {
    let job: Job
    let upload: Upload
    let context: JobDownloader.Context
    let progress: JobProgress
    let network: JobNetwork
    private let files: PartialFiles
    private let started = DispatchTime.now()
    let deadline: ContinuousClock.Instant?

    init(job: Job, context: JobDownloader.Context, progress: JobProgress? = nil) {
        self.job = job
        upload = job.upload ?? Upload()
        self.context = context
        self.progress = progress ?? JobProgress(total: nil)
        network = JobNetwork(job: job, transport: context.transport, perHost: context.perHost, environment: context.environment)
        files = PartialFiles(root: context.root, dest: job.dest.resolved)
        deadline = job.settings.deadline.map { .now + .seconds($0) }
    }

    /// What the run's report says of the job.
    func run() async -> JobResult {
        var result = await perform()
        result.isUpload = true
        result.duration = DispatchTime.now().seconds(since: started)
        return result.redacted(by: network.redactor)
    }

    /// The state cache's key for what was uploaded to a URL (its ``MirrorURL/identity``): it starts
    /// with "/", which no dest can (dests are relative), so it never meets a file's entry.
    static func stateKey(urlIdentity: String) -> String {
        "/upload/" + urlIdentity
    }

    // MARK: - Steps

    private func perform() async -> JobResult {
        guard let mirror = network.mirrors.first ?? nil else {
            return failed(BatchFetchError(.connection, "invalid URL \(job.url?.redacted ?? "")"))
        }
        let opened: OpenedSource
        do {
            opened = try open()
        } catch {
            return failed(error)
        }
        defer { close(opened.descriptor) }
        let source = opened.source
        progress.moved(to: 0, total: source.size)
        let stateKey = Self.stateKey(urlIdentity: mirror.identity)
        // This file (unchanged since) was uploaded to this URL by an earlier run.
        let recorded = context.state.entry(for: stateKey, status: opened.status)
            .flatMap { $0.digests["sha256"] == source.sha256 ? $0 : nil }
        if job.settings.refresh != .always, let upToDate = await alreadyThere(source, mirror: mirror, recorded: recorded) {
            enterCache(opened)
            return upToDate
        }
        if context.interruption.isInterrupted { return failed(BatchFetchError(.interrupted, "the run was interrupted")) }
        if mirror.store != nil, job.method == .put, source.size > S3Multipart.threshold {
            return await sendInParts(opened, mirror: mirror, stateKey: stateKey)
        }

        let form: MultipartForm?
        do {
            let fileName = String(job.dest.resolved.split(separator: "/").last ?? "file")
            form = try upload.form.map { try MultipartForm(form: $0, fileName: fileName) }
        } catch {
            return failed(BatchFetchError(.ioError, "cannot frame the form: \(error)"))
        }
        var sending = Sending(job: job, source: source, mirror: mirror, form: form)
        let outcome = await send(opened, &sending)
        var result = result(.uploaded, source: source, url: sending.displayURL)
        result.redirects = sending.redirects
        result.attempts = sending.attempts.records
        result.bytesTransferred = sending.bytesSent
        switch outcome {
        case .failure(let failure):
            result.status = failure.code == .interrupted ? .interrupted : .failed
            result.failure = failure
            result.httpStatus = sending.lastStatus
            return result
        case .success(let (head, _)):
            result.httpStatus = head.status
            result.checksumVerified = UploadRules.confirms(head, source: source) ? true : nil
            var etag = head.header("etag")
            if etag == nil, job.method == .put {
                // Many stores (nginx's WebDAV) answer a PUT without an ETag: one HEAD learns it,
                // so that the next run can tell the file is there.
                let observation = await probe()
                if case .answered = observation.outcome, observation.size == source.size { etag = observation.etag }
            }
            result.etag = etag
            context.state.record(stateKey, status: opened.status, digests: ["sha256": source.sha256], urlSHA256: mirror.identity,
                                 etag: etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }, lastModified: nil)
            enterCache(opened)
            return result
        }
    }

    /// Enters the file the target now holds into the content cache (`cache:`), copied from the
    /// descriptor it was hashed and sent from while it is still that file: what a team uploads
    /// is what its next fetch by hash finds (Docs/Cache.md).
    func enterCache(_ opened: OpenedSource) {
        var digests = ["sha256": opened.source.sha256]
        if let md5 = opened.source.md5 { digests["md5"] = md5 }
        context.cache?.insert(digests: digests, from: opened.descriptor, verified: opened.status, name: job.dest.redacted)
    }

    /// The result of an up-to-date job when the target shows it holds the file (a `PUT`, asked
    /// with `HEAD`) or an earlier run posted it (a `POST`); nil when the file is to be sent.
    private func alreadyThere(_ source: UploadRules.Source, mirror: MirrorURL, recorded: StateCache.Entry?) async -> JobResult? {
        var observation: MirrorObservation?
        let evidence: String?
        if job.method == .put {
            observation = await probe()
            evidence = observation.flatMap { UploadRules.alreadyThere($0, source: source, recordedETag: recorded?.etag) }
        } else {
            evidence = recorded == nil ? nil : UploadRules.postedBefore
        }
        guard let evidence else { return nil }
        var result = result(.upToDate, source: source, url: mirror.printed)
        result.httpStatus = observation?.httpStatus
        result.etag = observation?.etag ?? recorded?.etag
        result.evidence = evidence
        return result
    }

    /// A result about `source` sent (or not) to `url`.
    func result(_ status: JobResult.Status, source: UploadRules.Source, url: String) -> JobResult {
        var result = JobResult(id: job.id, status: status, dest: job.dest.redacted)
        result.url = url
        result.mirrorIndex = 0
        result.size = source.size
        result.checksums = ["sha256": source.sha256]
        if let md5 = source.md5 { result.checksums["md5"] = md5 }
        return result
    }

    /// The file to send, open, with what is known of it.
    struct OpenedSource {
        var descriptor: Int32
        var status: stat
        var source: UploadRules.Source
    }

    /// Opens the file beneath the output directory and takes its digests: the state cache's when
    /// the file is the one a download (or an earlier upload) verified, else one pass over it.
    private func open() throws(BatchFetchError) -> OpenedSource {
        let shown = job.dest.redacted
        guard let directory = try files.openDirectory(create: false) else {
            throw BatchFetchError(.ioError, "nothing to upload: no file at \(shown)")
        }
        guard directory.status(files.destName) != nil else {
            throw BatchFetchError(.ioError, "nothing to upload: no file at \(shown)")
        }
        let descriptor = try directory.openFile(files.destName, O_RDONLY | O_NONBLOCK)
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw BatchFetchError(.unsafePath, "\(shown) is not a regular file; refusing to upload it")
        }
        let size = Int64(status.st_size)
        let cached = context.state.entry(for: job.dest.resolved, status: status)
        var digests = cached?.digests ?? [:]
        if digests["sha256"] == nil || (upload.contentMD5 && digests["md5"] == nil) {
            do {
                let (computed, bytes) = try Digester.digests(ofDescriptor: descriptor, also: upload.contentMD5 ? [.md5] : [])
                guard bytes == size else { throw BatchFetchError(.sourceChanged, "\(shown) changed while it was read") }
                digests.merge(computed) { _, new in new }
            } catch let failure as BatchFetchError {
                close(descriptor)
                throw failure
            } catch {
                close(descriptor)
                throw BatchFetchError(.ioError, "cannot read \(shown): \(error)")
            }
            context.state.record(job.dest.resolved, status: status, digests: digests, urlSHA256: cached?.urlSHA256,
                                 etag: cached?.etag, lastModified: cached?.lastModified)
        }
        let source = UploadRules.Source(size: size, sha256: digests["sha256"]!, md5: upload.contentMD5 ? digests["md5"] : nil)
        return OpenedSource(descriptor: descriptor, status: status, source: source)
    }

    /// What the target shows now (`HEAD`, by the job's network rules), asked once: a target that
    /// cannot answer is sent the file, whose own request is retried as the job says.
    private func probe() async -> MirrorObservation {
        var probe = MirrorProbe(job: job, network: network, hosts: context.hosts)
        probe.network.retry.retries = 0
        return await probe.observe(mirror: 0, deep: false)
    }

    /// What one request of an upload sends: the whole file (between a form's prefix and
    /// suffix), a range of it (a part of a multipart upload), or bytes of its own (a multipart
    /// upload's control requests).
    enum Payload: Equatable {
        case file
        case part(offset: Int64, length: Int64)
        case bytes(Data)
    }

    /// The state of the sending: where to, what happened so far.
    struct Sending {
        var url: URL
        var displayURL: String
        var redirects: [String] = []
        var attempts = AttemptLog()
        var bytesSent: Int64 = 0
        var lastStatus: Int?
        var headers: [(name: String, value: String)]
        let form: MultipartForm?
        /// The HTTP method: the job's, or a multipart upload's (`POST`, `PUT`, `DELETE`).
        var method: String
        var payload = Payload.file
        /// A POST that may be sent again (a multipart upload's control requests are idempotent).
        var retryPost = false

        /// A request of a multipart upload to `url` (the object's, with its query).
        init(url: URL, displayURL: String, method: String, payload: Payload) {
            self.url = url
            self.displayURL = displayURL
            headers = []
            form = nil
            self.method = method
            self.payload = payload
            retryPost = true
        }

        init(job: Job, source: UploadRules.Source, mirror: MirrorURL, form: MultipartForm?) {
            url = mirror.url
            displayURL = mirror.printed
            self.form = form
            method = job.method.rawValue
            var headers = [(name: "Content-Digest", value: UploadRules.contentDigest(sha256: source.sha256))]
            if let md5 = source.md5 { headers.append((name: "Content-MD5", value: UploadRules.contentMD5(md5))) }
            if let form {
                headers.append((name: "Content-Type", value: form.contentType))
            } else if !job.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                headers.append((name: "Content-Type", value: "application/octet-stream"))
            }
            self.headers = headers
        }
    }

    /// Sends the payload until the target takes it or the job fails: one request per attempt,
    /// each reading the file (or its part) from its start. The answer's head, and the start of
    /// its body (a multipart upload's control answers are read from it).
    func send(_ opened: OpenedSource, _ sending: inout Sending) async -> Result<(head: TransportResponseHead, body: Data), BatchFetchError> {
        let progress = self.progress
        while true {
            if context.interruption.isInterrupted { return .failure(BatchFetchError(.interrupted, "the run was interrupted")) }
            let watch = RequestWatch<UploadHandler.Outcome>()
            var pace: (@Sendable (Int) async -> Void)?
            if let limiter = context.rateLimiter {
                pace = { count in await limiter.take(Int64(count)) }
            }
            let sent: @Sendable (Int) -> Void = { count in
                watch.touch()
                progress.received(count)
            }
            let body: UploadBody
            switch sending.payload {
            case .file:
                body = UploadBody(descriptor: opened.descriptor, fileSize: opened.source.size,
                                  prefix: sending.form?.prefix ?? Data(), suffix: sending.form?.suffix ?? Data(), pace: pace, sent: sent)
            case .part(let offset, let length):
                body = UploadBody(descriptor: opened.descriptor, fileSize: length, fileOffset: offset, pace: pace, sent: sent)
            case .bytes(let data):
                body = UploadBody(descriptor: opened.descriptor, fileSize: 0, prefix: data)
            }
            let handler = UploadHandler(watch: watch, body: body)
            var request = network.request(sending.url, mirrorIndex: 0, method: sending.method, extra: sending.headers,
                                          timeout: job.settings.timeout)
            if sending.form != nil {
                request.headers.removeAll { $0.name.lowercased() == "content-type" && $0.value != sending.form?.contentType }
            }
            request.upload = body
            if sending.payload == .file { progress.moved(to: 0, total: opened.source.size) }
            let outcome = await Exchange.perform(
                request, handler: handler, transport: network.transport, hosts: context.hosts, interruption: context.interruption,
                idleTimeout: .seconds(job.settings.timeout), deadline: deadline)
            guard let outcome else { return .failure(BatchFetchError(.interrupted, "the run was interrupted")) }
            sending.bytesSent += body.bytesSent
            sending.lastStatus = outcome.head?.status ?? sending.lastStatus
            let followed = sending.redirects.count
            let current = sending.url
            var verdict = UploadRules.verdict(
                head: outcome.head, failure: outcome.failure, bodyStarted: body.started, method: sending.method == "POST" ? .post : .put,
                retryPost: upload.retryPost || sending.retryPost, snippet: UploadRules.snippet(outcome.body),
                redirect: { status, location in
                    network.redirect.decide(status: status, location: location, from: current, followed: followed,
                                            bucketRegion: outcome.head?.header("x-amz-bucket-region"))
                })
            if context.interruption.isInterrupted { verdict = .fail(BatchFetchError(.interrupted, "the run was interrupted")) }
            if let deadline, ContinuousClock.now >= deadline, verdict != UploadRules.Verdict.accepted {
                verdict = .fail(BatchFetchError(.deadlineExceeded, "the job's deadline (\(job.settings.deadline ?? 0)s) passed"))
            }
            if verdict == .accepted, let head = outcome.head, sending.payload == .file {
                if let changed = sourceChanged(opened, sentSHA256: body.sentSHA256) { verdict = .fail(changed) }
                else if let contradiction = UploadRules.contradiction(head, source: opened.source) { verdict = .fail(contradiction) }
            } else if let changed = sourceChanged(opened, sentSHA256: nil) {
                verdict = .fail(changed)
            }
            sending.attempts.record(mirror: 0, url: sending.displayURL, status: outcome.head?.status,
                                    failure: verdict.failure)
            switch verdict {
            case .accepted:
                return .success((outcome.head!, outcome.body))
            case .redirect(let target):
                sending.url = target
                sending.displayURL = target.absoluteString
                sending.redirects.append(sending.displayURL)
            case .fail(let failure):
                return .failure(failure)
            case .retry(let failure, let retryAfter):
                let remaining = deadline.map { ($0 - .now).inSeconds }
                switch sending.attempts.retry(after: failure, retryAfter: retryAfter, remaining: remaining, policy: network.retry) {
                case .giveUp(let reason):
                    return .failure(reason)
                case .wait(let delay):
                    let wait = delay.draw()
                    guard await context.interruption.sleep(.seconds(wait)) else {
                        return .failure(BatchFetchError(.interrupted, "the run was interrupted"))
                    }
                    sending.attempts.waited(wait)
                }
            }
        }
    }

    /// A failure when the file is no longer what was announced: its identity changed since it was
    /// opened, or (after a whole body went out) the bytes sent hash to another sha256.
    func sourceChanged(_ opened: OpenedSource, sentSHA256: String?) -> BatchFetchError? {
        var now = stat()
        let same = fstat(opened.descriptor, &now) == 0 && StateCache.sameFile(now, opened.status)
        if same, sentSHA256.map({ $0 == opened.source.sha256 }) ?? true { return nil }
        return BatchFetchError(.sourceChanged, "\(job.dest.redacted) changed while it was being uploaded; the target may hold "
            + "the changed bytes under the digest announced for the old ones (a server that checks Content-Digest refuses them)")
    }

    func failed(_ failure: BatchFetchError) -> JobResult {
        var result = JobResult(failed: job, failure)
        if failure.code == .interrupted { result.status = .interrupted }
        result.url = network.mirrors.first??.printed
        return result
    }
}
