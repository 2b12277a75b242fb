import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import BatchFetchState
import Foundation

/// Combines the reports of a split manifest's shards into one report v1 (`merge-reports`,
/// Docs/Contracts.md §7): every job of the manifest exactly once, the summary counted again from
/// the jobs and the status by the command's precedence, as if one machine had run it all.
///
/// A merge never guesses: every report must be a shard report of one command, one manifest
/// (its sha256) and one split, each shard exactly once, no job in two shards, and together as
/// many jobs as the manifest has. Each problem names the report it is about; all are reported.
package enum ReportMerge {
    /// Why the reports do not make one whole: every problem found, each naming its report.
    package struct Problems: Error, Sendable, Equatable {
        package var messages: [String]
    }

    /// The merged report of `reports` (each with the name it was given by), or every problem.
    /// Jobs are ordered by id (UTF-8), which no shard count changes.
    package static func merge(_ reports: [(name: String, report: RunReport)]) -> Result<RunReport, Problems> {
        var problems: [String] = []
        guard let (firstName, first) = reports.first else { return .failure(Problems(messages: ["no reports to merge"])) }
        // The manifest most reports are for is the one: a stray report is named, not the others.
        var votes: [String: Int] = [:]
        for (_, report) in reports { votes[report.manifest.identity, default: 0] += 1 }
        let manifest = reports.map(\.report.manifest.identity).max { votes[$0]! < votes[$1]! }!
        let majority = reports.first { $0.report.manifest.identity == manifest }!.report.manifest
        let listing = reports.reduce(nil) { RunReport.JobsReported.narrower($0, $1.report.jobsReported) }
        var byShard: [Int: [String]] = [:]
        for (name, report) in reports {
            guard let scope = report.shard else {
                problems.append("\(name) is not a shard report (it has no 'shard': it was written without --shard)")
                continue
            }
            if report.command != first.command {
                problems.append("\(name) is a \(report.command.rawValue) report; \(firstName) is a \(first.command.rawValue) report")
            }
            if report.manifest.sha256 != majority.sha256 {
                problems.append("\(name) (shard \(scope.shard)) is for another manifest: sha256 "
                    + "\(report.manifest.sha256.prefix(12))…, where \(votes[manifest]!) of the \(reports.count) reports have "
                    + "\(majority.sha256.prefix(12))…")
            } else if report.manifest.identity != manifest {
                problems.append("\(name) (shard \(scope.shard)) is for other job lists than \(votes[manifest]!) of the "
                    + "\(reports.count) reports: " + majority.listChanges(to: report.manifest))
            }
            if let expected = first.shard, scope.shard.count != expected.shard.count || scope.manifestJobs != expected.manifestJobs {
                problems.append("\(name) is shard \(scope.shard) of a manifest of \(scope.manifestJobs) jobs; \(firstName) is "
                    + "shard \(expected.shard) of \(expected.manifestJobs) jobs: all reports must come from one split")
            }
            byShard[scope.shard.index, default: []].append(name)
        }
        if let scope = first.shard, problems.isEmpty {
            for index in 0..<scope.shard.count {
                let names = byShard[index] ?? []
                if names.isEmpty {
                    problems.append("shard \(index)/\(scope.shard.count) is missing")
                } else if names.count > 1 {
                    problems.append("shard \(index)/\(scope.shard.count) is given \(names.count) times: \(names.joined(separator: ", "))")
                }
            }
            // Jobs are compared only across a whole set of shards: a shard given twice repeats them all.
            if problems.isEmpty {
                var seen: [String: String] = [:]
                for (name, report) in reports {
                    for job in report.jobs {
                        if let other = seen.updateValue(name, forKey: job.id) {
                            problems.append("job '\(job.id)' is in both \(other) and \(name)")
                        }
                    }
                }
                if problems.isEmpty && listing == nil && seen.count != scope.manifestJobs {
                    problems.append("the shard reports list \(seen.count) jobs, but the manifest has \(scope.manifestJobs)")
                }
            }
        }
        guard problems.isEmpty else { return .failure(Problems(messages: problems)) }

        // Reports that list only some jobs merge into one that lists what all of them list;
        // their summaries, which count every job, are added up.
        let startedAt = reports.map(\.report.startedAt).min()!
        let jobs = reports.flatMap { name, report in
            // Each shard's start offsets are from its own start; the merged report's from the earliest.
            let shift = UTCTime.secondsSince1970(rfc3339: report.startedAt).flatMap { shard in
                UTCTime.secondsSince1970(rfc3339: startedAt).map { shard - $0 }
            } ?? 0
            return report.jobs.map { job in
                var job = job
                job.startedSeconds = job.startedSeconds.map { (($0 + shift) * 1000).rounded() / 1000 }
                return job
            }
        }
        .filter { listing?.lists($0.status) ?? true }
        .sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        let summary = listing == nil ? RunReport.summary(of: jobs, command: first.command)
            : reports.dropFirst().reduce(first.summary) { $0.adding($1.report.summary) }
        let interrupted = reports.contains { $0.report.status == .interrupted }
        let finishedAt = reports.map(\.report.finishedAt).max()!
        let span = UTCTime.secondsSince1970(rfc3339: finishedAt).flatMap { end in
            UTCTime.secondsSince1970(rfc3339: startedAt).map { end - $0 }
        }
        return .success(RunReport(
            tool: .init(version: ToolVersion.current), command: first.command, manifest: first.manifest,
            startedAt: startedAt, finishedAt: finishedAt,
            durationSeconds: span ?? reports.map(\.report.durationSeconds).max()!,
            status: RunReport.status(of: summary, command: first.command, interrupted: interrupted), summary: summary,
            shard: nil, mergedFrom: reports.map(\.name), jobsReported: listing, jobs: ReportJobs(jobs)))
    }
}
