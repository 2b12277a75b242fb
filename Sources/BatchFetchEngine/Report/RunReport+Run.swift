import BatchFetchSpec
import Foundation

extension RunReport {
    /// The report of `run`: per-job results, their counts, and the run's status.
    static func ofRun(manifest: Manifest, options: RunOptions, results: [JobResult], interrupted: Bool,
                      startDate: Date, started: DispatchTime) -> RunReport {
        RunReport(command: .run, manifest: manifest, options: options, startDate: startDate, started: started,
                  jobs: results.map(RunReport.Job.init), interrupted: interrupted)
    }

    /// A report of `command` over `jobs`, counted and given a status as the command counts
    /// (``summary(of:command:)``, ``status(of:command:interrupted:)``): the tool, the manifest's
    /// path and sha256, the shard, and the time from `startDate` (`started` on the monotonic
    /// clock) to now. Every command's report is made here.
    init(command: Command, manifest: Manifest, options: RunOptions, startDate: Date, started: DispatchTime,
         jobs: [Job], interrupted: Bool) {
        let summary = Self.summary(of: jobs, command: command)
        self.init(
            tool: .init(version: ToolVersion.current), command: command,
            manifest: .init(path: manifest.path, sha256: options.manifestSHA256 ?? Runner.fileSHA256(manifest.path)),
            startedAt: RunReport.timestamp(startDate), finishedAt: RunReport.timestamp(Date()),
            durationSeconds: (DispatchTime.now().seconds(since: started) * 1000).rounded() / 1000,
            status: Self.status(of: summary, command: command, interrupted: interrupted), summary: summary,
            shard: options.shard, jobs: jobs)
    }

    /// The counts of a report's jobs: for `run` jobs by status, bytes moved, and bytes of every
    /// file the run leaves in place; for `check` verdicts per mirror, for `verify` per job.
    static func summary(of jobs: [Job], command: Command) -> Summary {
        var summary = Summary()
        summary.jobs = jobs.count
        guard command == .run else {
            let statuses: [MirrorVerdict.Status] = jobs.flatMap { job -> [MirrorVerdict.Status] in
                if let mirrors = job.mirrors { return mirrors.map(\.status) }
                if case .verdict(let verdict) = job.status { return [verdict] }
                return []
            }
            summary.ok = statuses.filter { $0 == .ok }.count
            summary.drift = statuses.filter { $0 == .drift }.count
            summary.missing = statuses.filter { $0 == .missing }.count
            summary.unreachable = statuses.filter { $0 == .unreachable }.count
            summary.bytesTotal = jobs.filter { $0.status == .ok }.reduce(0) { $0 + ($1.size ?? 0) }
            return summary
        }
        for job in jobs {
            guard case .run(let outcome) = job.status else { continue }
            switch outcome {
            case .downloaded: summary.downloaded += 1
            case .upToDate: summary.upToDate += 1
            case .failed: summary.failed += 1
            case .skipped: summary.skipped += 1
            case .interrupted: summary.interrupted += 1
            }
            summary.bytesTransferred += job.bytesTransferred ?? 0
            if job.status == .downloaded || job.status == .upToDate { summary.bytesTotal += job.size ?? 0 }
        }
        return summary
    }

    /// A report's status by precedence (Docs/Contracts.md §2): for `run`, interrupted, else
    /// failed when any job failed or was skipped, else succeeded; for `check` and `verify`,
    /// succeeded only when every verdict is ok.
    static func status(of summary: Summary, command: Command, interrupted: Bool) -> Status {
        guard command == .run else {
            return (summary.drift ?? 0) + (summary.missing ?? 0) + (summary.unreachable ?? 0) == 0 ? .succeeded : .failed
        }
        if interrupted || summary.interrupted > 0 { return .interrupted }
        return summary.failed + summary.skipped > 0 ? .failed : .succeeded
    }
}
