import BatchFetchSpec
import Foundation

extension RunReport {
    /// The report of `check` or `verify`: per-job verdicts, counted per mirror (check) or per
    /// job (verify).
    static func verdicts(command: Command, manifest: Manifest, options: RunOptions, results: [JobResult],
                       startDate: Date, started: DispatchTime) -> RunReport {
        var summary = RunReport.Summary()
        summary.jobs = results.count
        let statuses: [MirrorVerdict.Status] = results.flatMap { result -> [MirrorVerdict.Status] in
            if let mirrors = result.mirrors { return mirrors.map(\.status) }
            if case .verdict(let verdict) = result.status { return [verdict] }
            return []
        }
        summary.ok = statuses.filter { $0 == .ok }.count
        summary.drift = statuses.filter { $0 == .drift }.count
        summary.missing = statuses.filter { $0 == .missing }.count
        summary.unreachable = statuses.filter { $0 == .unreachable }.count
        summary.bytesTotal = results.filter { $0.status == .ok }.reduce(0) { $0 + ($1.size ?? 0) }
        return RunReport(
            tool: .init(version: ToolVersion.current), command: command,
            manifest: .init(path: manifest.path, sha256: options.manifestSHA256 ?? Runner.fileSHA256(manifest.path)),
            startedAt: RunReport.timestamp(startDate), finishedAt: RunReport.timestamp(Date()),
            durationSeconds: (DispatchTime.now().seconds(since: started) * 1000).rounded() / 1000,
            status: statuses.allSatisfy { $0 == .ok } ? .succeeded : .failed, summary: summary,
            jobs: results.map(RunReport.Job.init))
    }
}
