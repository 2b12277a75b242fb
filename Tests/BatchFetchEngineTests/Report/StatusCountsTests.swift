@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import Testing

/// The one list of statuses, in order, that every count of a report iterates.
@Suite struct StatusCountsTests {
    @Test func aRunsCountsComeFromItsSummaryInOrder() {
        var summary = RunReport.Summary()
        (summary.downloaded, summary.upToDate, summary.failed, summary.interrupted) = (3, 2, 1, 1)
        let counts = StatusCounts(summary, command: .run)
        #expect(counts.map(\.status.rawValue) == ["downloaded", "uploaded", "up_to_date", "failed", "skipped", "interrupted", "deferred"])
        #expect(counts.map(\.count) == [3, 0, 2, 1, 0, 1, 0])
        #expect(counts.filter { $0.count > 0 || $0.shownAtZero }.map(\.label) == ["downloaded", "up to date", "failed", "skipped", "interrupted"])
        // Deferred jobs are shown when a budget deferred some.
        summary.deferred = 2
        #expect(StatusCounts(summary, command: .run).filter { $0.count > 0 || $0.shownAtZero }.map(\.label).last == "deferred")
        #expect(counts[.run(.upToDate)] == 2)
    }

    @Test func checkAndVerifyCountVerdicts() {
        var summary = RunReport.Summary()
        (summary.ok, summary.missing) = (4, 1)
        #expect(StatusCounts(summary, command: .check).map(\.count) == [4, 0, 1, 0])
        #expect(StatusCounts.statuses(of: .verify).map(\.rawValue) == ["ok", "drift", "missing", "unreachable"])
        // Every status a report can hold is one of the list's.
        #expect(StatusCounts.statuses(of: .run).count == JobResult.Outcome.allCases.count)
        #expect(StatusCounts.statuses(of: .check).count == MirrorVerdict.Status.allCases.count)
    }
}
