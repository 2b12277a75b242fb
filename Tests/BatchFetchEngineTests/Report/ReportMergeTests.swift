@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// `merge-reports`: shard reports become one report v1, or every reason they do not.
@Suite struct ReportMergeTests {
    static func job(_ id: String, _ status: JobResult.Status, size: Int64 = 10) -> RunReport.Job {
        var result = JobResult(id: id, status: status, dest: "\(id).bin")
        result.size = size
        result.bytesTransferred = status == .downloaded ? size : 0
        return RunReport.Job(result)
    }

    static func report(_ index: Int, of count: Int, jobs: [RunReport.Job], manifestJobs: Int, sha: String = "ab",
                       command: RunReport.Command = .run, started: String = "2026-11-23T01:00:00Z",
                       finished: String = "2026-11-23T01:00:10Z") -> RunReport {
        let summary = RunReport.summary(of: jobs, command: command)
        return RunReport(
            tool: .init(version: "test"), command: command, manifest: .init(path: "m.yaml", sha256: sha),
            startedAt: started, finishedAt: finished, durationSeconds: 10,
            status: RunReport.status(of: summary, command: command, interrupted: false), summary: summary,
            shard: ShardScope(shard: Shard(index: index, count: count)!, manifestJobs: manifestJobs), mergedFrom: nil, jobs: ReportJobs(jobs))
    }

    private func problems(_ reports: [(String, RunReport)]) -> [String] {
        guard case .failure(let problems) = ReportMerge.merge(reports.map { (name: $0.0, report: $0.1) }) else { return [] }
        return problems.messages
    }

    @Test func shardsMergeIntoOneReportCountedAgainFromItsJobs() throws {
        let a = Self.report(0, of: 2, jobs: [Self.job("b", .downloaded), Self.job("d", .upToDate)], manifestJobs: 4,
                            started: "2026-11-23T01:00:05Z", finished: "2026-11-23T01:00:20Z")
        let b = Self.report(1, of: 2, jobs: [Self.job("c", .failed), Self.job("a", .downloaded, size: 5)], manifestJobs: 4)
        let merged = try ReportMerge.merge([("r0.json", a), ("r1.json", b)]).get()
        #expect(merged.jobs.map(\.id) == ["a", "b", "c", "d"])
        #expect(merged.summary.jobs == 4 && merged.summary.downloaded == 2 && merged.summary.upToDate == 1 && merged.summary.failed == 1)
        #expect(merged.summary.bytesTransferred == 15 && merged.summary.bytesTotal == 25)
        #expect(merged.status == .failed)
        #expect(merged.shard == nil && merged.mergedFrom == ["r0.json", "r1.json"])
        #expect(merged.startedAt == "2026-11-23T01:00:00Z" && merged.finishedAt == "2026-11-23T01:00:20Z")
        #expect(merged.durationSeconds == 20)
        #expect(merged.manifest.sha256 == "ab" && merged.command == .run)
    }

    @Test func anInterruptedShardMakesTheWholeInterrupted() throws {
        var a = Self.report(0, of: 2, jobs: [Self.job("a", .downloaded)], manifestJobs: 2)
        a.status = .interrupted
        let b = Self.report(1, of: 2, jobs: [Self.job("b", .downloaded)], manifestJobs: 2)
        #expect(try ReportMerge.merge([("a", a), ("b", b)]).get().status == .interrupted)
    }

    @Test func checkReportsCountVerdictsPerMirror() throws {
        let a = Self.report(0, of: 2, jobs: [Self.job("a", .verdict(.ok))], manifestJobs: 2, command: .verify)
        let b = Self.report(1, of: 2, jobs: [Self.job("b", .verdict(.drift))], manifestJobs: 2, command: .verify)
        let merged = try ReportMerge.merge([("a", a), ("b", b)]).get()
        #expect(merged.summary.ok == 1 && merged.summary.drift == 1 && merged.status == .failed)
    }

    @Test func aMissingShardAShardTwiceAndAForeignReportAreNamed() {
        let a = Self.report(0, of: 3, jobs: [Self.job("a", .downloaded)], manifestJobs: 3)
        let b = Self.report(1, of: 3, jobs: [Self.job("b", .downloaded)], manifestJobs: 3)
        #expect(problems([("a.json", a), ("b.json", b)]) == ["shard 2/3 is missing"])
        #expect(problems([("a.json", a), ("b.json", b), ("b2.json", b)]) == [
            "shard 1/3 is given 2 times: b.json, b2.json", "shard 2/3 is missing"])
        let foreign = Self.report(2, of: 3, jobs: [Self.job("c", .downloaded)], manifestJobs: 3, sha: "cd")
        #expect(problems([("a.json", a), ("b.json", b), ("c.json", foreign)]).first
            == "c.json (shard 2/3) is for another manifest: sha256 cd…, where 2 of the 3 reports have ab…")
        // The same manifest with another version of its job list is other jobs.
        var otherList = Self.report(2, of: 3, jobs: [Self.job("c", .downloaded)], manifestJobs: 3)
        otherList.manifest.lists = [.init(path: "urls.csv", sha256: "ef")]
        var listed = [a, b].map { report -> RunReport in
            var report = report
            report.manifest.lists = [.init(path: "urls.csv", sha256: "12")]
            return report
        }
        #expect(problems([("a.json", listed[0]), ("b.json", listed[1]), ("c.json", otherList)]).first
            == "c.json (shard 2/3) is for other job lists than 2 of the 3 reports: urls.csv (sha256 12… → ef…)")
        listed.append(otherList)
        listed[2].manifest.lists = listed[0].manifest.lists
        #expect(problems([("a.json", listed[0]), ("b.json", listed[1]), ("c.json", listed[2])]).isEmpty)
        // The stray report is named even when it comes first.
        #expect(problems([("c.json", foreign), ("a.json", a), ("b.json", b)]).first?.hasPrefix("c.json (shard 2/3)") == true)
        let otherSplit = Self.report(2, of: 4, jobs: [Self.job("c", .downloaded)], manifestJobs: 3)
        #expect(problems([("a.json", a), ("b.json", b), ("c.json", otherSplit)]).first?.contains("from one split") == true)
        let check = Self.report(2, of: 3, jobs: [Self.job("c", .verdict(.ok))], manifestJobs: 3, command: .check)
        #expect(problems([("a.json", a), ("b.json", b), ("c.json", check)]).first == "c.json is a check report; a.json is a run report")
        var whole = b
        whole.shard = nil
        #expect(problems([("a.json", a), ("w.json", whole)]).first?.hasPrefix("w.json is not a shard report") == true)
    }

    @Test func aJobInTwoShardsOrFewerJobsThanTheManifestIsRefused() {
        let a = Self.report(0, of: 2, jobs: [Self.job("a", .downloaded), Self.job("x", .downloaded)], manifestJobs: 3)
        let b = Self.report(1, of: 2, jobs: [Self.job("x", .downloaded)], manifestJobs: 3)
        #expect(problems([("a.json", a), ("b.json", b)]) == ["job 'x' is in both a.json and b.json"])
        let short = Self.report(1, of: 2, jobs: [], manifestJobs: 3)
        #expect(problems([("a.json", a), ("b.json", short)]) == ["the shard reports list 2 jobs, but the manifest has 3"])
    }

    @Test func theMergedReportRoundTripsAsReportV1() throws {
        let a = Self.report(0, of: 1, jobs: [Self.job("a", .downloaded)], manifestJobs: 1)
        let merged = try ReportMerge.merge([("a", a)]).get()
        let object = try JSONSerialization.jsonObject(with: try StableJSON.encode(merged)) as? [String: Any]
        #expect(object?["merged_from"] as? [String] == ["a"] && object?["shard"] == nil)
        let shardObject = try JSONSerialization.jsonObject(with: try StableJSON.encode(a)) as? [String: Any]
        #expect(shardObject?["shard"] as? [String: Int] == ["index": 0, "count": 1, "manifest_jobs": 1])
        #expect(try JSONDecoder().decode(RunReport.self, from: try StableJSON.encode(a)).shard == a.shard)
    }

    /// Shard reports that list only some jobs merge into one that lists what every one of them
    /// lists, with their summaries added up (not counted again from the listed jobs), and no
    /// complaint that jobs are missing.
    @Test func reportsListingSomeJobsMergeByTheirSummaries() throws {
        let all = [Self.job("a", .downloaded), Self.job("b", .upToDate)]
        let rest = [Self.job("c", .failed), Self.job("d", .upToDate)]
        var changed = Self.report(0, of: 2, jobs: all.filter { $0.status != .upToDate }, manifestJobs: 4)
        changed.summary = RunReport.summary(of: all, command: .run)
        changed.jobsReported = .changed
        var failed = Self.report(1, of: 2, jobs: rest.filter { $0.status == .failed }, manifestJobs: 4)
        failed.summary = RunReport.summary(of: rest, command: .run)
        failed.jobsReported = .failed
        let merged = try ReportMerge.merge([("a", changed), ("b", failed)]).get()
        #expect(merged.jobsReported == .failed)
        #expect(merged.jobs.map(\.id) == ["c"])
        #expect(merged.summary.jobs == 4 && merged.summary.upToDate == 2 && merged.summary.downloaded == 1 && merged.summary.failed == 1)
        #expect(merged.status == .failed)
    }
}
