import BatchFetchSpec
import Foundation

/// `batchfetch verify`: checks every dest on disk against the manifest's size and checksums and
/// the lock, without any network. Every file is read and hashed (no state cache): this is the
/// check for files that changed behind batchfetch's back.
public final class Verifier: Sendable {
    public let manifest: Manifest
    public let lock: LockFile?
    public let options: RunOptions

    public init(manifest: Manifest, lock: LockFile?, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.lock = lock
        self.options = options
    }

    public func run() async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let jobs = manifest.downloads.jobs
        // No output directory: every file is missing.
        let root = try? SafeDirectory.root(manifest.outputDirectory, create: false)
        // Hashing is CPU-bound: one file per core.
        let results = await boundedMap(jobs.count, limit: ProcessInfo.processInfo.activeProcessorCount) { index in
            self.verify(jobs[index], root: root)
        }
        return RunReport(command: .verify, manifest: manifest, options: options, startDate: startDate, started: started,
                         jobs: ReportJobs(results.map(RunReport.Job.init)), interrupted: false)
    }

    /// The manifest's expectations, then the lock's: the same check as a run's up-to-date test,
    /// with every file hashed.
    func verify(_ job: Job, root: SafeDirectory?) -> JobResult {
        let started = DispatchTime.now()
        var result = JobResult(id: job.id, status: .ok, dest: job.dest.redacted)
        defer { result.duration = DispatchTime.now().seconds(since: started) }
        let entry = lock?.jobs[job.id]
        let expectations = [ContentExpectation(job: job)] + (entry.map { [ContentExpectation(lock: $0)] } ?? [])
        switch root.map({ DestinationCheck(job: job, root: $0, state: nil).inspect(against: expectations) }) ?? .missing {
        case .missing:
            result.status = .missing
        case .unreadable(let size, let failure):
            result.size = size
            drift(&result, failure)
        case .differs(let size, let digests, let failure):
            result.size = size
            result.checksums = digests ?? [:]
            drift(&result, failure)
        case .matches(let size, let digests):
            result.size = size
            result.checksums = digests
            result.checksumVerified = job.checksums.isEmpty && entry == nil ? nil : true
        }
        return result
    }

    private func drift(_ result: inout JobResult, _ failure: DownloadFailure) {
        result.status = .drift
        result.failure = failure
    }
}
