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
        return RunReport(command: command, manifest: manifest, options: options, startDate: startDate, started: started,
                         status: statuses.allSatisfy { $0 == .ok } ? .succeeded : .failed, summary: summary, results: results)
    }
}
