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
        let jobs = manifest.jobs
        let results = await boundedMap(jobs.count, limit: options.concurrency ?? manifest.concurrency) { index in
            await self.check(jobs[index], transport: transport, hosts: hosts)
        }
        return RunReport.verdicts(command: "check", manifest: manifest, options: options, results: results,
                                  startDate: startDate, started: started)
    }

    private func check(_ job: Job, transport: any HTTPTransport, hosts: HostLimiter) async -> JobResult {
        let started = DispatchTime.now()
        let network = JobNetwork(job: job, transport: transport, perHost: manifest.perHost, environment: options.environment)
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        let entry = lock?.jobs[job.id]
        var mirrors: [MirrorCheck] = []
        for (index, url) in job.urls.enumerated() {
            let observation = await probe.observe(mirror: index, deep: deep)
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
        return result.redacted(by: network.redactor)
    }

    /// A job's status: its most serious mirror verdict.
    static func worst(_ statuses: [MirrorVerdict.Status]) -> JobResult.Status {
        if statuses.contains(.drift) { return .drift }
        if statuses.contains(.missing) { return .missing }
        if statuses.contains(.unreachable) { return .unreachable }
        return .ok
    }
}
