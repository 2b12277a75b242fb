import BatchFetchSpec
import Foundation

/// `batchfetch pin`: makes every job's content present and verified (a normal run: files already
/// verified are reused, the rest downloaded), then asks each mirror for its size and validators,
/// and returns the lockfile — or none when a job failed, so a lock never records a guess.
public final class Pinner: Sendable {
    public let manifest: Manifest
    public let options: RunOptions

    public init(manifest: Manifest, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.options = options
    }

    /// The lockfile (nil if any job did not succeed), and the run's report. `handle` sees the
    /// run's events, for progress.
    public func run(handle: (RunHandle) async -> Void = { _ in }) async -> (LockFile?, RunReport) {
        var runOptions = options
        runOptions.lock = nil
        let run = Runner(manifest: manifest, options: runOptions).start()
        await handle(run)
        let report = await run.report
        guard report.status == .succeeded else { return (nil, report) }
        let transport = options.httpTransport(perHost: manifest.perHost)
        let hosts = HostLimiter(limit: manifest.perHost)
        let jobs = manifest.jobs
        let found = await boundedMap(jobs.count, limit: options.concurrency ?? manifest.concurrency) { index in
            await Self.entry(jobs[index], report.jobs[index], network: JobNetwork(
                job: jobs[index], transport: transport, perHost: self.manifest.perHost, environment: self.options.environment),
                hosts: hosts)
        }
        var entries: [String: LockFile.Entry] = [:]
        for (job, entry) in zip(jobs, found) { entries[job.id] = entry }
        let complete = entries.count == jobs.count
        return (complete ? LockFile(manifest: (manifest.path as NSString).lastPathComponent, jobs: entries) : nil, report)
    }

    private static func entry(_ job: Job, _ result: RunReport.Job, network: JobNetwork, hosts: HostLimiter) async
        -> LockFile.Entry? {
        guard let sha256 = result.checksums?["sha256"], let size = result.size else { return nil }
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        let redact = network.redactor.redact
        var mirrors: [LockFile.Mirror] = []
        for (index, url) in job.urls.enumerated() {
            let seen = await probe.observe(mirror: index, deep: false)
            let answered = seen.outcome == .answered
            // A mirror's own sha256 only as it announced it (Repr-Digest): which mirror served the
            // bytes depends on the run, and the lockfile must not.
            mirrors.append(LockFile.Mirror(
                url: url.redacted, size: answered ? seen.size : nil, etag: answered ? seen.etag.map(redact) : nil,
                lastModified: answered ? seen.lastModified.map(redact) : nil, sha256: answered ? seen.sha256 : nil))
        }
        return LockFile.Entry(dest: job.dest.redacted, size: size, sha256: sha256, mirrors: mirrors)
    }
}
