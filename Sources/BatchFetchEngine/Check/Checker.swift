import BatchFetchSpec
import Foundation

/// `batchfetch check`: asks every mirror of every job what it serves and compares that with the
/// lock (or the manifest when there is no lock). Nothing is written to disk but the report.
public final class Checker: Sendable {
    public let manifest: Manifest
    public let lock: LockFile?
    public let deep: Bool
    public let options: RunOptions

    public init(manifest: Manifest, lock: LockFile?, deep: Bool, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.lock = lock
        self.deep = deep
        self.options = options
    }

    public func run() async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let transport = options.httpTransport(perHost: manifest.perHost)
        let hosts = HostLimiter(limit: manifest.perHost)
        let limit = max(1, options.concurrency ?? manifest.concurrency)
        var results = [JobResult?](repeating: nil, count: manifest.jobs.count)
        await withTaskGroup(of: (Int, JobResult).self) { group in
            var next = 0
            func launch() {
                guard next < manifest.jobs.count else { return }
                let index = next
                let job = manifest.jobs[index]
                next += 1
                group.addTask { (index, await self.check(job, transport: transport, hosts: hosts)) }
            }
            for _ in 0..<limit { launch() }
            while let (index, result) = await group.next() {
                results[index] = result
                launch()
            }
        }
        return Self.report(command: "check", manifest: manifest, options: options, results: results.compactMap { $0 },
                           startDate: startDate, started: started)
    }

    private func check(_ job: Job, transport: any HTTPTransport, hosts: HostLimiter) async -> JobResult {
        let started = DispatchTime.now()
        let probe = MirrorProbe(
            transport: transport, hosts: hosts, headers: job.headers.map { (name: $0.name, value: $0.value.resolved) },
            retries: job.settings.retries, backoff: job.settings.backoff, backoffMax: job.settings.backoffMax,
            timeout: job.settings.timeout)
        let entry = lock?.jobs[job.id]
        var mirrors: [MirrorCheck] = []
        for (index, url) in job.urls.enumerated() {
            let observation = await probe.observe(url.resolved, deep: deep)
            let locked = entry?.mirrors.first { $0.url == url.redacted }
            let expected = MirrorExpectation(
                size: entry?.size ?? job.size,
                sha256: entry?.sha256 ?? job.checksums.first { $0.algorithm == .sha256 }?.hex,
                etag: locked?.etag, lastModified: locked?.lastModified)
            mirrors.append(MirrorCheck(mirrorIndex: index, url: url.redacted, observation: observation,
                                       verdict: .judge(observation, expected: expected)))
        }
        var result = JobResult(id: job.id, status: Self.worst(mirrors.map(\.status)), dest: job.dest.redacted)
        result.mirrors = mirrors
        result.size = entry?.size ?? job.size
        if let sha256 = entry?.sha256 ?? job.checksums.first(where: { $0.algorithm == .sha256 })?.hex {
            result.checksums = ["sha256": sha256]
        }
        result.duration = DispatchTime.now().seconds(since: started)
        return result
    }

    /// A job's status: its most serious mirror verdict.
    static func worst(_ statuses: [MirrorVerdict.Status]) -> JobResult.Status {
        if statuses.contains(.drift) { return .drift }
        if statuses.contains(.missing) { return .missing }
        if statuses.contains(.unreachable) { return .unreachable }
        return .ok
    }

    /// The report of `check` or `verify`: per-job verdicts, counted per mirror (check) or per
    /// job (verify).
    static func report(command: String, manifest: Manifest, options: RunOptions, results: [JobResult],
                       startDate: Date, started: DispatchTime) -> RunReport {
        var summary = RunReport.Summary()
        summary.jobs = results.count
        let statuses: [MirrorVerdict.Status] = results.flatMap { result -> [MirrorVerdict.Status] in
            if let mirrors = result.mirrors { return mirrors.map(\.status) }
            return MirrorVerdict.Status(rawValue: result.status.rawValue).map { [$0] } ?? []
        }
        summary.ok = statuses.filter { $0 == .ok }.count
        summary.drift = statuses.filter { $0 == .drift }.count
        summary.missing = statuses.filter { $0 == .missing }.count
        summary.unreachable = statuses.filter { $0 == .unreachable }.count
        summary.bytesTotal = results.filter { $0.status == .ok }.reduce(0) { $0 + ($1.size ?? 0) }
        return RunReport(
            tool: .init(version: Runner.version), command: command,
            manifest: .init(path: manifest.path, sha256: options.manifestSHA256 ?? Runner.fileSHA256(manifest.path)),
            startedAt: RunReport.timestamp(startDate), finishedAt: RunReport.timestamp(Date()),
            durationSeconds: (DispatchTime.now().seconds(since: started) * 1000).rounded() / 1000,
            status: statuses.allSatisfy { $0 == .ok } ? .succeeded : .failed, summary: summary,
            jobs: results.map(RunReport.Job.init))
    }
}
