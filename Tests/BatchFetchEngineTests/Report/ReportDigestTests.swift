@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// What `batchfetch report` shows first, computed once for its three formats: bounded lists of
/// failures and drift, the slowest jobs, a timeline that keeps the failures when it must leave
/// jobs out, and a throughput whose area is the bytes moved.
@Suite struct ReportDigestTests {
    private func job(_ id: String, _ status: JobResult.Status, start: Double?, duration: Double, bytes: Int64) -> RunReport.Job {
        var job = ReportMergeTests.job(id, status, size: bytes)
        job.startedSeconds = start
        job.durationSeconds = duration
        job.bytesTransferred = bytes
        return job
    }

    private func report(_ jobs: [RunReport.Job], duration: Double = 10) -> RunReport {
        var report = ReportMergeTests.report(0, of: 1, jobs: jobs, manifestJobs: jobs.count)
        report.shard = nil
        report.durationSeconds = duration
        return report
    }

    @Test func failuresAreBoundedAndSayHowManyWereLeftOut() {
        var jobs = (0..<120).map { job("bad\($0)", .failed, start: 0, duration: 1, bytes: 0) }
        jobs.append(job("good", .downloaded, start: 1, duration: 5, bytes: 1000))
        let digest = ReportDigest(report(jobs))
        #expect(digest.failures.count == ReportDigest.limit)
        #expect(digest.failuresLeftOut == 70)
        #expect(digest.slowest.first?.id == "good")
        #expect(digest.counts.first! == ("jobs", 121))
        #expect(digest.counts.contains { $0 == ("failed", 120) } && !digest.counts.contains { $0.label == "skipped" })
    }

    /// Over the limit, the timeline keeps every failed job, then the slowest, shown in start order.
    @Test func aLongTimelineKeepsTheFailures() {
        var jobs = (0..<1_000).map { job("ok\($0)", .downloaded, start: Double($0) / 100, duration: Double($0 % 37) / 10, bytes: 10) }
        jobs.append(job("failed-late", .failed, start: 9.9, duration: 0.01, bytes: 0))
        jobs.append(job("never", .skipped, start: nil, duration: 0, bytes: 0))
        let digest = ReportDigest(report(jobs))
        #expect(digest.timeline.count == ReportDigest.timelineLimit)
        #expect(digest.timelineLeftOut == 1_001 - ReportDigest.timelineLimit, "the job that never started is not on it")
        #expect(digest.timeline.contains { $0.id == "failed-late" })
        #expect(zip(digest.timeline, digest.timeline.dropFirst()).allSatisfy { $0.start <= $1.start })
        let shortestShown = digest.timeline.filter { $0.status == "downloaded" }.map(\.duration).min()!
        #expect(jobs.filter { $0.status == .downloaded && ($0.durationSeconds ?? 0) > shortestShown }.count <= ReportDigest.timelineLimit)
    }

    /// Bytes spread over each job's span: rate × slice width, summed, is every byte moved.
    @Test func throughputAddsUpToTheBytesMoved() {
        let jobs = [job("a", .downloaded, start: 0.5, duration: 2.25, bytes: 9_000),
                    job("b", .downloaded, start: 3, duration: 6, bytes: 60_000),
                    job("c", .upToDate, start: 1, duration: 0, bytes: 0)]
        let digest = ReportDigest(report(jobs, duration: 10))
        let rates = digest.throughput(of: report(jobs, duration: 10), buckets: 100)
        let total = rates.reduce(0) { $0 + $1 * 0.1 }
        #expect(abs(total - 69_000) < 1)
        #expect(abs(rates[50] - 10_000) < 1, "b alone moves 10,000 B/s at 5 s")
        #expect(rates[99] == 0)
    }

    @Test func markdownCellsCannotBreakTheTable() {
        #expect(ReportMarkdown.cell("a | b\nc <x> `d`") == #"a \| b c \<x\> \`d\`"#)
        #expect(ReportHTML.escape(#"<img src="x" onerror='y'>&"#) == "&lt;img src=&quot;x&quot; onerror=&apos;y&apos;&gt;&amp;")
        #expect(ReportHTML.ticks(10) == [0, 2, 4, 6, 8, 10])
        #expect(ReportHTML.ticks(0.35).count == 4, "0, 0.1, 0.2, 0.3: \(ReportHTML.ticks(0.35))")
    }

    /// A check's drift names the mirror and what differs, in every format.
    @Test func driftNamesTheMirrorAndWhatDiffers() {
        var job = ReportSchemaKeysTests.fullJob()
        job.status = .drift
        job.error = nil
        var report = report([job])
        report.command = .check
        let digest = ReportDigest(report)
        #expect(digest.drift == [ReportDigest.Problem(id: "all", status: "drift", code: "size",
                                                       message: "[0] http://127.0.0.1/all.bin: size: expected 1, got 4096")])
        #expect(ReportMarkdown.render(report).contains("| `all` | drift | \\[0\\] http://127.0.0.1/all.bin: size: expected 1, got 4096 |"))
        #expect(ReportPlainText.render(report).contains("  all  drift  size: [0] http://127.0.0.1/all.bin: size: expected 1, got 4096"))
        #expect(ReportHTML.render(report).contains("<h2>Drift (1)</h2>"))
    }
}
