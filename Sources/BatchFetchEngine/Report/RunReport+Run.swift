import BatchFetchSpec
import Foundation

extension RunReport {
    /// The report of `run`: per-job results, their counts, and the run's status.
    static func ofRun(manifest: Manifest, options: RunOptions, results: [JobResult], interrupted: Bool,
                      startDate: Date, started: DispatchTime) -> RunReport {
        let summary = runSummary(results)
        return RunReport(command: .run, manifest: manifest, options: options, startDate: startDate, started: started,
                         status: runStatus(summary, interrupted: interrupted), summary: summary, results: results)
    }

    /// A report of `command` over `results`: the tool, the manifest's path and sha256, and the
    /// time from `startDate` (`started` on the monotonic clock) to now. Every command's report
    /// is made here.
    init(command: Command, manifest: Manifest, options: RunOptions, startDate: Date, started: DispatchTime,
         status: Status, summary: Summary, results: [JobResult]) {
        self.init(
            tool: .init(version: ToolVersion.current), command: command,
            manifest: .init(path: manifest.path, sha256: options.manifestSHA256 ?? Runner.fileSHA256(manifest.path)),
            startedAt: RunReport.timestamp(startDate), finishedAt: RunReport.timestamp(Date()),
            durationSeconds: (DispatchTime.now().seconds(since: started) * 1000).rounded() / 1000,
            status: status, summary: summary, jobs: results.map(RunReport.Job.init))
    }

    /// Jobs by status; bytes moved, and bytes of every file the run leaves in place.
    static func runSummary(_ results: [JobResult]) -> Summary {
        var summary = Summary()
        summary.jobs = results.count
        for result in results {
            guard case .run(let outcome) = result.status else { continue }
            switch outcome {
            case .downloaded: summary.downloaded += 1
            case .upToDate: summary.upToDate += 1
            case .failed: summary.failed += 1
            case .skipped: summary.skipped += 1
            case .interrupted: summary.interrupted += 1
            }
            summary.bytesTransferred += result.bytesTransferred
            if result.status == .downloaded || result.status == .upToDate { summary.bytesTotal += result.size ?? 0 }
        }
        return summary
    }

    /// The run's status by precedence (Docs/Contracts.md): interrupted, else failed when any job
    /// failed or was skipped, else succeeded.
    static func runStatus(_ summary: Summary, interrupted: Bool) -> Status {
        if interrupted || summary.interrupted > 0 { return .interrupted }
        return summary.failed + summary.skipped > 0 ? .failed : .succeeded
    }
}
