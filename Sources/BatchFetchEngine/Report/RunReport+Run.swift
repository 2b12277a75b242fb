import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

extension RunReport {
    /// The report of `run` from results held in memory (a run that could not start, tests).
    static func ofRun(manifest: Manifest, options: RunOptions, results: [JobResult], interrupted: Bool,
                      startDate: Date, started: DispatchTime) -> RunReport {
        RunReport(command: .run, manifest: manifest, options: options, startDate: startDate, started: started,
                  jobs: ReportJobs(results.map(RunReport.Job.init)), interrupted: interrupted)
    }

    /// A report of `command` over `jobs`, counted and given a status as the command counts
    /// (``Summary/count(_:command:)``, ``status(of:command:interrupted:)``): the tool, the
    /// manifest's path and sha256, the shard, and the time from `startDate` (`started` on the
    /// monotonic clock) to now. Every command's report is made here; `summary` when the jobs
    /// were counted as they came (a run's journal).
    init(command: Command, manifest: Manifest, options: RunOptions, startDate: Date, started: DispatchTime,
         jobs: ReportJobs, summary: Summary? = nil, interrupted: Bool) {
        let summary = summary ?? Self.summary(of: jobs, command: command)
        self.init(
            tool: .init(version: ToolVersion.current), command: command,
            manifest: ManifestInfo(manifest, sha256: options.manifestSHA256),
            startedAt: RunReport.timestamp(startDate), finishedAt: RunReport.timestamp(Date()),
            durationSeconds: (DispatchTime.now().seconds(since: started) * 1000).rounded() / 1000,
            status: Self.status(of: summary, command: command, interrupted: interrupted), summary: summary,
            shard: options.shard, jobsReported: command == .run ? options.reportJobs : nil, jobs: jobs)
    }

    /// The counts of a report's jobs (``Summary/count(_:command:)``).
    static func summary(of jobs: some Collection<Job>, command: Command) -> Summary {
        var summary = Summary()
        summary.jobs = jobs.count
        if command != .run { (summary.ok, summary.drift, summary.missing, summary.unreachable) = (0, 0, 0, 0) }
        for job in jobs { summary.count(job, command: command) }
        return summary
    }

    /// A report's status by precedence (Docs/Contracts.md §2): for `run`, interrupted, else
    /// failed when any job failed or was skipped, else deferred when a budget stopped a job,
    /// else succeeded; for `check` and `verify`,
    /// succeeded only when every verdict is ok.
    static func status(of summary: Summary, command: Command, interrupted: Bool) -> Status {
        guard command == .run else {
            return (summary.drift ?? 0) + (summary.missing ?? 0) + (summary.unreachable ?? 0) == 0 ? .succeeded : .failed
        }
        if interrupted || summary.interrupted > 0 { return .interrupted }
        if summary.failed + summary.skipped > 0 { return .failed }
        return (summary.deferred ?? 0) > 0 ? .deferred : .succeeded
    }
}

extension RunReport.Summary {
    /// This summary and `other`'s added up: the summary of shard reports that do not list
    /// every job (``RunReport/JobsReported``), which cannot be counted again from their jobs.
    func adding(_ other: RunReport.Summary) -> RunReport.Summary {
        func sum(_ a: Int?, _ b: Int?) -> Int? { a == nil && b == nil ? nil : (a ?? 0) + (b ?? 0) }
        var total = self
        total.jobs += other.jobs
        total.downloaded += other.downloaded
        total.uploaded = sum(uploaded, other.uploaded)
        total.upToDate += other.upToDate
        total.failed += other.failed
        total.skipped += other.skipped
        total.interrupted += other.interrupted
        total.deferred = sum(deferred, other.deferred)
        total.bytesTransferred += other.bytesTransferred
        total.bytesTotal += other.bytesTotal
        total.fromCache = sum(fromCache, other.fromCache)
        total.ok = sum(ok, other.ok)
        total.drift = sum(drift, other.drift)
        total.missing = sum(missing, other.missing)
        total.unreachable = sum(unreachable, other.unreachable)
        return total
    }

    /// Counts one job of a report of `command` (all but `jobs`, the number of jobs): for `run`
    /// by status, bytes moved, and bytes of every file the run leaves in place; for `check`
    /// verdicts per mirror, for `verify` per job.
    mutating func count(_ job: RunReport.Job, command: RunReport.Command) {
        guard command == .run else {
            let verdicts: [MirrorVerdict.Status]
            if let mirrors = job.mirrors {
                verdicts = mirrors.map(\.status)
            } else if case .verdict(let verdict) = job.status {
                verdicts = [verdict]
            } else {
                verdicts = []
            }
            for verdict in verdicts {
                switch verdict {
                case .ok: ok = (ok ?? 0) + 1
                case .drift: drift = (drift ?? 0) + 1
                case .missing: missing = (missing ?? 0) + 1
                case .unreachable: unreachable = (unreachable ?? 0) + 1
                }
            }
            if job.status == .ok { bytesTotal += job.size ?? 0 }
            return
        }
        guard case .run(let outcome) = job.status else { return }
        switch outcome {
        case .downloaded: downloaded += 1
        case .uploaded: uploaded = (uploaded ?? 0) + 1
        case .upToDate: upToDate += 1
        case .failed: failed += 1
        case .skipped: skipped += 1
        case .interrupted: interrupted += 1
        case .deferred: deferred = (deferred ?? 0) + 1
        }
        bytesTransferred += job.bytesTransferred ?? 0
        if job.source == .cache { fromCache = (fromCache ?? 0) + 1 }
        if job.status.succeeded { bytesTotal += job.size ?? 0 }
    }
}
