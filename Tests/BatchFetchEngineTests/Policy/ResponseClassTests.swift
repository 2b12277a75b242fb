@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// One table says which answers are asked again, and every kind of request obeys it: 425 Too
/// Early (RFC 8470) was added to it in one line, and `run`'s state machine, a segment's range,
/// an upload and `check`/`pin`'s probe all retry it.
@Suite struct ResponseClassTests {
    @Test(arguments: [(200, ResponseClass.success), (206, .success), (301, .redirect), (303, .redirect), (308, .redirect),
                      (304, .refused), (404, .refused), (408, .retryable), (425, .retryable), (429, .retryable),
                      (500, .retryable), (503, .retryable), (599, .retryable), (416, .refused), (451, .refused)])
    func statusesAreClassifiedOnce(status: Int, expected: ResponseClass) {
        #expect(ResponseClass(status: status) == expected)
    }

    static let early = TransportResponseHead(status: 425, headers: ["retry-after": "2"])

    @Test func aDownloadRetriesTooEarly() {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: ["https://a.example/f"], expectedSize: nil, checksumPinned: false, retries: 2, backoff: 1, backoffMax: 8,
            allowInsecureRedirect: false))
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.early) == .sendAfter(PlannedRequest(mirrorIndex: 0, url: "https://a.example/f"),
                                                               RetryDelay(seconds: 2, jitter: false)))
    }

    @Test func aSegmentRetriesTooEarly() {
        let planner = SegmentPlannerTests.planner()
        guard case .retryable(_, let after) = planner.judge(Self.early, for: 0..<10) else {
            Issue.record("425 not retried by a segment")
            return
        }
        #expect(after == 2)
    }

    @Test func anUploadRetriesTooEarly() {
        let verdict = UploadRules.verdict(head: Self.early, failure: nil, bodyStarted: true, method: .put, retryPost: false,
                                          snippet: "", redirect: { _, _ in .refuse(BatchFetchError(.redirectRefused, "")) })
        guard case .retry(_, let after) = verdict else {
            Issue.record("425 not retried by an upload: \(verdict)")
            return
        }
        #expect(after == 2)
    }

    /// `check` (and `pin`, which asks through the same probe) retries a 425 and finds the mirror.
    @Test func aMirrorProbeRetriesTooEarly() async throws {
        let world = try await Harness()
        var file = OriginFile.text("content\n")
        file.faults = [.status(425, retryAfter: "0")]
        world.origin.serve("/f", file)
        let report = try await world.check("""
            version: 1
            defaults: {retries: 2, backoff: 10ms}
            jobs:
              - {id: f, url: "{origin}/f", size: 8}
            """)
        let asked = world.origin.requests("/f").count
        await world.close()
        #expect(report.jobs.first?.mirrors?.first?.status == .ok, "\(report.jobs)")
        #expect(asked == 2)
    }
}
