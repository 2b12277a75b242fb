@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The run report as it is written: counts, status precedence and the JSON keys of report v1.
@Suite struct RunReportTests {
    static func result(_ id: String, _ status: JobResult.Status, size: Int64? = nil, transferred: Int64 = 0) -> JobResult {
        var result = JobResult(id: id, status: status, dest: "\(id).bin")
        result.size = size
        result.bytesTransferred = transferred
        return result
    }

    @Test func theSummaryCountsEveryStatusAndTheBytesLeftInPlace() {
        let summary = RunReport.summary(of: [
            Self.result("a", .downloaded, size: 10, transferred: 10),
            Self.result("b", .upToDate, size: 5),
            Self.result("c", .failed, size: 7, transferred: 3),
            Self.result("d", .skipped),
            Self.result("e", .interrupted, transferred: 2),
        ].map(RunReport.Job.init), command: .run)
        #expect(summary.jobs == 5)
        let counts: [Int] = [summary.downloaded, summary.upToDate, summary.failed, summary.skipped, summary.interrupted]
        #expect(counts == [1, 1, 1, 1, 1])
        #expect(summary.bytesTransferred == 15)
        // Only files the run leaves verified count: not the failed job's size.
        #expect(summary.bytesTotal == 15)
    }

    @Test func statusPrecedenceIsInterruptedThenFailedThenSucceeded() {
        var summary = RunReport.Summary()
        #expect(RunReport.status(of: summary, command: .run, interrupted: false) == .succeeded)
        summary.skipped = 1
        #expect(RunReport.status(of: summary, command: .run, interrupted: false) == .failed)
        summary.skipped = 0
        summary.failed = 1
        #expect(RunReport.status(of: summary, command: .run, interrupted: false) == .failed)
        #expect(RunReport.status(of: summary, command: .run, interrupted: true) == .interrupted)
        summary.interrupted = 1
        #expect(RunReport.status(of: summary, command: .run, interrupted: false) == .interrupted)
    }

    @Test func theJSONUsesReportV1sKeysAndKeepsAFailuresHistory() throws {
        let text = "version: 1\njobs:\n  - {id: a, url: \"http://127.0.0.1/a\"}\n"
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        var failed = Self.result("a", .failed, transferred: 4)
        failed.failure = BatchFetchError(.httpStatus, "HTTP 503 from http://127.0.0.1/a")
        failed.attempts = [AttemptRecord(mirrorIndex: 0, url: "http://127.0.0.1/a", httpStatus: 503,
                                         failure: failed.failure, waited: 1.5)]
        var options = RunOptions()
        options.manifestSHA256 = String(repeating: "0", count: 64)
        let report = RunReport.ofRun(manifest: manifest, options: options, results: [failed, Self.result("b", .skipped)],
                                     interrupted: false, startDate: Date(), started: .now())
        let json = try #require(try JSONSerialization.jsonObject(with: StableJSON.encode(report)) as? [String: Any])
        #expect(json["schema_version"] as? Int == 1)
        #expect(json["command"] as? String == "run")
        #expect(json["status"] as? String == "failed")
        let summary = try #require(json["summary"] as? [String: Any])
        #expect(summary["up_to_date"] as? Int == 0 && summary["bytes_transferred"] as? Int == 4)
        let jobs = try #require(json["jobs"] as? [[String: Any]])
        let error = try #require(jobs[0]["error"] as? [String: Any])
        #expect(error["code"] as? String == "http_status")
        let attempts = try #require(error["attempts"] as? [[String: Any]])
        #expect(attempts[0]["http_status"] as? Int == 503 && attempts[0]["waited_seconds"] as? Double == 1.5)
        // A skipped job moved nothing and says so by leaving the field out.
        #expect(jobs[1]["status"] as? String == "skipped" && jobs[1]["bytes_transferred"] == nil)
        // It reads back as the same report.
        let decoded = try JSONDecoder().decode(RunReport.self, from: StableJSON.encode(report))
        #expect(decoded.jobs.map(\.id) == ["a", "b"] && decoded.status == .failed)
    }
}
