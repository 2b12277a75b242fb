import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// `batchfetch check`: asks every mirror of every job what it serves and compares that with the
/// lock (or the manifest when there is no lock). Nothing is written to disk but the report.
package final class Checker: Sendable {
    package let manifest: Manifest
    package let lock: LockFile?
    package let deep: Bool
    package let options: RunOptions
    /// How listing the sources and prefixes again differs from the lock
    /// (``ListingExpansion/drift(since:original:)``): an added file is drift ("added"), a
    /// removed one missing, a changed one drift, each without asking its mirrors; a source that
    /// could not be listed again is unreachable. (A pinned file whose mirror serves other bytes
    /// is drift too, as for any pinned file.)
    package let listing: ListingDrift

    package init(manifest: Manifest, lock: LockFile?, deep: Bool, options: RunOptions = RunOptions(), listing: ListingDrift = ListingDrift()) {
        self.manifest = manifest
        self.lock = lock
        self.deep = deep
        self.options = options
        self.listing = listing
    }

    package func run() async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let transport = options.httpTransport(perHost: manifest.perHost)
        let hosts = HostLimiter(limit: manifest.perHost)
        let jobs = manifest.downloads.jobs
        let sums = await sumFiles(transport: transport, hosts: hosts)
        var results = await boundedMap(jobs.count, limit: options.concurrency ?? manifest.concurrency) { index in
            if let failure = self.options.unexpanded[jobs[index].id] {
                // A prefix whose listing failed: nothing of it can be judged.
                var result = JobResult(id: jobs[index].id, status: .verdict(.unreachable), dest: jobs[index].dest.redacted)
                result.failure = failure
                return result
            }
            if self.listing.removed.contains(jobs[index].id) {
                var result = JobResult(id: jobs[index].id, status: .verdict(.missing), dest: jobs[index].dest.redacted)
                result.failure = BatchFetchError(.lockMismatch, "removed: no longer listed (the lock pinned \(jobs[index].url?.redacted ?? ""))")
                return result
            }
            if let change = self.listing.changed[jobs[index].id] {
                var result = JobResult(id: jobs[index].id, status: .verdict(.drift), dest: jobs[index].dest.redacted)
                result.failure = BatchFetchError(.lockMismatch, change)
                return result
            }
            return await self.check(jobs[index], sums: sums, transport: transport, hosts: hosts)
        }
        for job in listing.added {
            var result = JobResult(id: job.id, status: .verdict(.drift), dest: job.dest.redacted)
            result.failure = BatchFetchError(.lockMismatch, "added: \(job.url?.redacted ?? "") is listed now but not in the lockfile")
            results.append(result)
        }
        for (id, failure) in listing.unlisted.sorted(by: { $0.key < $1.key }) {
            var result = JobResult(id: id, status: .verdict(.unreachable), dest: "")
            result.failure = failure
            results.append(result)
        }
        return RunReport(command: .check, manifest: manifest, options: options, startDate: startDate, started: started,
                         jobs: ReportJobs(results.map(RunReport.Job.init)), interrupted: false)
    }

    /// The sha256 a job is held to: the lock's, the manifest's, or (with `--deep`) its sum file's.
    private func expectedSHA256(_ job: Job, sums: [String: SumSource])
        -> (sha256: String?, problem: (MirrorVerdict.Status, BatchFetchError)?) {
        if let locked = lock?.jobs[job.id]?.sha256 { return (locked, nil) }
        if let pinned = job.checksums.first(where: { $0.algorithm == .sha256 })?.hex { return (pinned, nil) }
        guard let id = job.checksumsFrom, let source = sums[id] else { return (nil, nil) }
        switch source.file.flatMap({ job.withChecksums(from: $0, of: source.job) }) {
        case .success(let listed):
            return (listed.checksums.first { $0.algorithm == .sha256 }?.hex, nil)
        case .failure(let failure) where [.checksumUnavailable, .checksumMismatch, .signatureInvalid].contains(failure.code):
            // The mirror's own sum file no longer lists (or contradicts) the file, or its
            // signature no longer verifies: drift.
            return (nil, (.drift, failure))
        case .failure(let failure):
            return (nil, (.unreachable, BatchFetchError(.checksumUnavailable, "cannot fetch the sum file of '\(id)': \(failure.message)")))
        }
    }

    /// With `--deep`, the sum file of every `checksums_from` job whose digest no lock or pin
    /// gives, fetched once from its first mirror that answers (in memory, at most 16 MiB): a
    /// mirror whose file no longer matches its own SHA256SUMS is drift, not "ok".
    private func sumFiles(transport: any HTTPTransport, hosts: HostLimiter) async -> [String: SumSource] {
        guard deep else { return [:] }
        let needed = Set(manifest.jobs.filter { job in
            lock?.jobs[job.id] == nil && !job.checksums.contains { $0.algorithm == .sha256 }
        }.compactMap(\.checksumsFrom))
        var sums: [String: SumSource] = [:]
        for sumJob in manifest.jobs where needed.contains(sumJob.id) {
            let network = JobNetwork(job: sumJob, transport: transport, perHost: manifest.perHost, environment: options.environment)
            let probe = MirrorProbe(job: sumJob, network: network, hosts: hosts)
            var result = Result<SumFile, BatchFetchError>.failure(BatchFetchError(.connection, "no mirror"))
            for mirror in sumJob.urls.indices {
                if sumJob.signature != nil {
                    // Its digests count only once its signature verifies.
                    result = await Self.signedFile(sumJob, mirror: mirror, probe: probe).map { SumFile(text: $0.text) }
                    if case .failure(let failure) = result, failure.code == .signatureInvalid { break }
                } else {
                    result = await probe.fetch(mirror: mirror, limit: 16 << 20).map { SumFile(text: String(decoding: $0, as: UTF8.self)) }
                }
                if case .success = result { break }
            }
            sums[sumJob.id] = SumSource(job: sumJob, file: result.mapError { $0.redacted(by: network.redactor) })
        }
        return sums
    }

    /// A signed checksum file as mirror `mirror` serves it (at most 16 MiB, in a temporary file)
    /// with its signature checked (Docs/Signatures.md): its text — of a clear-signed file the
    /// signed text only — and who signed it; `signature_invalid` when it does not verify.
    static func signedFile(_ job: Job, mirror: Int, probe: MirrorProbe) async -> Result<(text: String, signer: Signer), BatchFetchError> {
        guard let rule = job.signature else { return .failure(BatchFetchError(.signatureInvalid, "no signature: to check")) }
        let data: Data
        switch await probe.fetch(mirror: mirror, limit: 16 << 20) {
        case .success(let fetched): data = fetched
        case .failure(let failure): return .failure(failure)
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-signed-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: file, contents: data, attributes: [.posixPermissions: 0o600]) else {
            return .failure(BatchFetchError(.ioError, "cannot write \(file)"))
        }
        defer { try? FileManager.default.removeItem(atPath: file) }
        return await SignatureGate(rule: rule).verify(fileAt: file, mirrors: [mirror], probe: probe).map { verified in
            (verified.signedText ?? String(decoding: data, as: UTF8.self), verified.signer)
        }
    }

    /// A `checksums_from` job and what its sum file held.
    private struct SumSource {
        var job: Job
        var file: Result<SumFile, BatchFetchError>
    }

    private func check(_ job: Job, sums: [String: SumSource], transport: any HTTPTransport,
                       hosts: HostLimiter) async -> JobResult {
        let started = DispatchTime.now()
        let network = JobNetwork(job: job, transport: transport, perHost: manifest.perHost, environment: options.environment)
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        let entry = lock?.jobs[job.id]
        let (sha256, sumProblem) = expectedSHA256(job, sums: sums)
        var mirrors: [MirrorCheck] = []
        for (index, url) in job.urls.enumerated() {
            let observation = await probe.observe(mirror: index, deep: deep)
            let locked = entry?.mirrors.first { $0.url == url.redacted }
            let expected = MirrorExpectation(
                size: entry?.size ?? job.size, sha256: sha256, etag: locked?.etag, lastModified: locked?.lastModified)
            mirrors.append(MirrorCheck(mirrorIndex: index, url: url.redacted, observation: observation,
                                       verdict: .judge(observation, expected: expected)))
        }
        var signer: Signer?
        var signatureFailure: BatchFetchError?
        if let rule = job.signature {
            // Every mirror that serves the file must serve it signed by the key the manifest
            // names and, with a lock, by the signer the lock recorded: a mirror that does not
            // is drift, its difference the signature.
            for index in mirrors.indices where mirrors[index].status == .ok || mirrors[index].status == .drift {
                var actual: String?
                switch await Self.signedFile(job, mirror: index, probe: probe) {
                case .success(let signed):
                    signer = signed.signer
                    if let recorded = entry?.signedBy, recorded != signed.signer {
                        actual = "signed by \(signed.signer.description)"
                        signatureFailure = BatchFetchError(.signatureInvalid, "mirror \(index) serves it signed by \(signed.signer.description); the lock recorded \(recorded.description)")
                    }
                case .failure(let failure) where failure.code == .signatureInvalid:
                    actual = failure.message
                    signatureFailure = failure
                case .failure:
                    break  // unreachable now; its verdict from the probe stands
                }
                if let actual {
                    mirrors[index].status = .drift
                    mirrors[index].differences = (mirrors[index].differences ?? [])
                        + [MirrorVerdict.Difference(field: "signature", expected: entry?.signedBy?.description ?? rule.keyDescription, actual: actual)]
                }
            }
        }
        var result = JobResult(id: job.id, status: .verdict(Self.worst(mirrors.map(\.status))), dest: job.dest.redacted)
        result.mirrors = mirrors
        result.signedBy = signer
        if let signatureFailure { result.failure = signatureFailure }
        result.size = entry?.size ?? job.size
        if let sha256 { result.checksums = ["sha256": sha256] }
        if let (status, failure) = sumProblem {
            result.failure = failure
            if result.status == .ok || (status == .drift && result.status == .unreachable) { result.status = .verdict(status) }
        }
        result.duration = DispatchTime.now().seconds(since: started)
        return result.redacted(by: network.redactor)
    }

    /// A job's status: its most serious mirror verdict.
    static func worst(_ statuses: [MirrorVerdict.Status]) -> MirrorVerdict.Status {
        if statuses.contains(.drift) { return .drift }
        if statuses.contains(.missing) { return .missing }
        if statuses.contains(.unreachable) { return .unreachable }
        return .ok
    }
}
