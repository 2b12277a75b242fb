@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// The attempt core's table for transport failures, and its log: the same failure means the
/// same thing to a download, a segment's range and an upload.
@Suite struct AttemptVerdictTests {
    @Test func transportFailuresAreClassifiedOnce() {
        #expect(AttemptVerdict(.timedOut, subject: "from u")
                == .retry(BatchFetchError(.timeout, "no data from u within the idle timeout"), retryAfter: nil))
        #expect(AttemptVerdict(.timedOut, subject: "") == .retry(BatchFetchError(.timeout, "no data within the idle timeout"), retryAfter: nil))
        #expect(AttemptVerdict(.connection("reset"), subject: "from u") == .retry(BatchFetchError(.connection, "from u: reset"), retryAfter: nil))
        #expect(AttemptVerdict(.other("odd"), subject: "") == .retry(BatchFetchError(.connection, "odd"), retryAfter: nil))
        #expect(AttemptVerdict(.tls("untrusted"), subject: "") == .nextMirror(BatchFetchError(.tls, "untrusted")))
        #expect(AttemptVerdict(.cancelled, subject: "from u") == .interrupted(BatchFetchError(.interrupted, "transfer cancelled")))
        guard case .retry(let shed, nil) = AttemptVerdict(.overloaded, subject: "") else {
            Issue.record("a shed transfer is not retried")
            return
        }
        #expect(shed.code == .connection)
    }

    @Test func statusesCarryTheirRetryAfter() {
        #expect(AttemptVerdict(status: 503, retryAfter: "7", subject: "for bytes 0-9")
                == .retry(BatchFetchError(.httpStatus, "HTTP 503 for bytes 0-9"), retryAfter: 7))
        #expect(AttemptVerdict(status: 403, retryAfter: "7", subject: "") == .nextMirror(BatchFetchError(.httpStatus, "HTTP 403")))
        #expect(AttemptVerdict(status: 204, retryAfter: nil, subject: "") == .success)
        #expect(AttemptVerdict(status: 307, retryAfter: nil, subject: "") == .redirect)
    }

    /// A TLS failure is not retried by any driver: the download moves to the next mirror, a
    /// segmented transfer stops (its single stream fails over), an upload fails.
    @Test func aTLSFailureIsNeverRetried() {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: ["https://a.example/f", "https://b.example/f"], expectedSize: nil, checksumPinned: false, retries: 2,
            backoff: 1, backoffMax: 8, allowInsecureRedirect: false))
        _ = machine.start(local: nil)
        #expect(machine.requestFailed(.tls("untrusted")) == .send(PlannedRequest(mirrorIndex: 1, url: "https://b.example/f")))
        #expect(machine.attempts.map(\.failure?.code) == [.tls])

        var planner = SegmentPlannerTests.planner()
        let range = planner.claim()!
        planner.release(range, writtenThrough: 0)
        guard case .stop(let failure) = planner.ended(range, .init(written: 0, failure: .tls("untrusted"))).verdict else {
            Issue.record("a segment retried a TLS failure")
            return
        }
        #expect(failure.code == .tls)

        let upload = UploadRules.verdict(head: nil, failure: .tls("untrusted"), bodyStarted: false, method: .put, retryPost: false,
                                         snippet: "", redirect: { _, _ in .refuse(BatchFetchError(.redirectRefused, "")) })
        #expect(upload == .fail(BatchFetchError(.tls, "untrusted")))
    }

    @Test func theLogCountsFailuresPerMirrorAndContinuesAnAttempt() {
        var log = AttemptLog()
        let policy = RetryPolicy(retries: 1, backoff: 0, backoffMax: 0)
        let failure = BatchFetchError(.connection, "reset")
        log.record(mirror: 0, url: "a", status: 206, failure: nil)
        log.record(mirror: 0, url: "a", status: 206, failure: failure, continuing: true)
        #expect(log.records.count == 1 && log.records[0].failure == failure)
        #expect(log.retry(after: failure, retryAfter: nil, remaining: nil, policy: policy) == .wait(RetryDelay(seconds: 0, jitter: true)))
        log.waited(2)
        log.record(mirror: 0, url: "a", status: 503, failure: failure)
        #expect(log.records.map(\.waited) == [0, 2])
        #expect(log.retry(after: failure, retryAfter: nil, remaining: nil, policy: policy) == .giveUp(failure))
        log.nextMirror()
        #expect(log.failures == 0)
    }
}
