@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// Range bookkeeping and the decisions of a segmented download, without sockets.
@Suite struct SegmentPlannerTests {
    static let mib: Int64 = 1 << 20

    static func planner(total: Int64 = 10 * mib, piece: Int64 = 4 * mib, done: ByteRanges = ByteRanges(),
                        retries: Int = 2) -> SegmentPlanner {
        SegmentPlanner(configuration: .init(total: total, pieceSize: piece, ifRange: "\"v1\"",
                                            retry: RetryPolicy(retries: retries, backoff: 1, backoffMax: 8, retryAfterMax: 60)),
                       done: done)
    }

    static func head(_ status: Int, _ headers: [String: String] = [:]) -> TransportResponseHead {
        TransportResponseHead(status: status, headers: headers)
    }

    @Test func byteRangesMergeOverlappingAndTouchingRanges() {
        var ranges = ByteRanges([10..<20, 30..<40])
        ranges.insert(20..<25)
        #expect(ranges.ranges == [10..<25, 30..<40])
        ranges.insert(24..<31)
        #expect(ranges.ranges == [10..<40])
        ranges.insert(0..<5)
        #expect(ranges.ranges == [0..<5, 10..<40])
        #expect(ranges.prefix == 5 && ranges.count == 35)
        ranges.remove(12..<14)
        #expect(ranges.ranges == [0..<5, 10..<12, 14..<40])
        #expect(ranges.firstGap(before: 50) == 5..<10)
        #expect(ranges.firstGap(from: 14, before: 50) == 40..<50)
        #expect(ranges.firstGap(from: 14, before: 40) == nil)
        #expect(ranges.clipped(to: 11).ranges == [0..<5, 10..<11])
    }

    @Test func byteRangesRoundTripAsPairsAndRefuseBadOnes() throws {
        let ranges = ByteRanges([0..<5, 9..<12])
        let json = try JSONEncoder().encode(ranges)
        #expect(String(decoding: json, as: UTF8.self) == "[[0,5],[9,12]]")
        #expect(try JSONDecoder().decode(ByteRanges.self, from: json) == ranges)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ByteRanges.self, from: Data("[[5,1]]".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ByteRanges.self, from: Data("[[1]]".utf8)) }
    }

    @Test func claimsTheLowestFreeRangeInPieces() {
        var planner = Self.planner(done: ByteRanges([0..<(1 * Self.mib)]))
        // Ranges end on the grid of 4 MiB pieces from byte 0.
        #expect(planner.claim() == Self.mib..<(4 * Self.mib))
        #expect(planner.claim() == (4 * Self.mib)..<(8 * Self.mib))
        #expect(planner.claim() == (8 * Self.mib)..<(10 * Self.mib))
        #expect(planner.claim() == nil)
        #expect(!planner.isComplete)
    }

    @Test func aRangeEndingEarlyReturnsItsRestToThePool() {
        var planner = Self.planner()
        let first = planner.claim()!
        let second = planner.claim()!
        planner.release(first, writtenThrough: 3 * Self.mib)
        #expect(planner.done.ranges == [0..<(3 * Self.mib)])
        // The lowest gap comes back first, even though later bytes were never claimed.
        #expect(planner.claim() == (3 * Self.mib)..<(4 * Self.mib))
        planner.release(second, writtenThrough: second.upperBound)
        #expect(planner.done.ranges == [0..<(3 * Self.mib), second])
    }

    @Test func completeWhenEveryByteIsWritten() {
        var planner = Self.planner(total: 6 * Self.mib)
        while let range = planner.claim() { planner.release(range, writtenThrough: range.upperBound) }
        #expect(planner.isComplete && planner.done.prefix == 6 * Self.mib)
    }

    @Test func a206MustMatchTheRangeTheTotalAndTheETag() {
        let planner = Self.planner(total: 1000)
        let range: Range<Int64> = 100..<200
        #expect(planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000", "ETag": "\"v1\""]), for: range) == .accept)
        for wrong in ["bytes 0-199/1000", "bytes 100-150/1000", "bytes 100-199/999", "bytes 100-199/*"] {
            guard case .stop(let failure) = planner.judge(Self.head(206, ["Content-Range": wrong]), for: range) else {
                Issue.record("\(wrong) accepted")
                continue
            }
            #expect(failure.code == .rangeNotHonoured)
        }
        guard case .stop(let changed) = planner.judge(
            Self.head(206, ["Content-Range": "bytes 100-199/1000", "ETag": "\"v2\""]), for: range) else {
            Issue.record("ETag change accepted")
            return
        }
        #expect(changed.code == .remoteChanged)
        // A 206 without the ETag it continues proves nothing (a server ignoring If-Range).
        guard case .stop(let unproven) = planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000"]), for: range) else {
            Issue.record("a 206 without validator accepted")
            return
        }
        #expect(unproven.code == .remoteChanged)
    }

    @Test func withLastModifiedAsTheValidatorEachRangeMustCarryTheSameDate() {
        let date = "Thu, 01 Jan 2026 00:00:00 GMT"
        let planner = SegmentPlanner(configuration: .init(total: 1000, pieceSize: 100, ifRange: date,
                                                          retry: RetryPolicy(retries: 2, backoff: 1, backoffMax: 8)))
        let range: Range<Int64> = 100..<200
        #expect(planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000", "Last-Modified": date]), for: range) == .accept)
        for headers in [["Content-Range": "bytes 100-199/1000", "Last-Modified": "Thu, 01 Jan 2026 01:00:00 GMT"],
                        ["Content-Range": "bytes 100-199/1000"]] {
            guard case .stop(let failure) = planner.judge(Self.head(206, headers), for: range) else {
                Issue.record("\(headers) accepted")
                continue
            }
            #expect(failure.code == .remoteChanged)
        }
    }

    @Test func a200MeansTheWrittenRangesCannotBeContinued() {
        guard case .stop(let failure) = Self.planner().judge(Self.head(200), for: 0..<10) else {
            Issue.record("200 accepted")
            return
        }
        #expect(failure.code == .remoteChanged)
    }

    @Test func retryableStatusesRetryAndRetryAfterIsHonouredUpToItsCap() {
        var planner = Self.planner()
        let unavailable = BatchFetchError(.httpStatus, "HTTP 503 for bytes 0-9")
        #expect(planner.judge(Self.head(503, ["Retry-After": "7"]), for: 0..<10) == .retryable(unavailable, retryAfter: 7))
        #expect(planner.failed(unavailable, retryAfter: 7) == .retry(unavailable, RetryDelay(seconds: 7, jitter: false)))
        #expect(planner.judge(Self.head(429), for: 0..<10)
            == .retryable(BatchFetchError(.httpStatus, "HTTP 429 for bytes 0-9"), retryAfter: nil))
        // Over retry_after_max (60 s here): segmenting stops; the single stream that follows
        // meets the same answer and fails over.
        guard case .stop(let capped) = planner.failed(unavailable, retryAfter: 86_400) else {
            Issue.record("a day's Retry-After was waited for")
            return
        }
        #expect(capped.message.contains("retry_after_max"))
        #expect(planner.claim() == nil)
        guard case .stop(let failure) = Self.planner().judge(Self.head(404), for: 0..<10) else {
            Issue.record("404 retried")
            return
        }
        #expect(failure.code == .httpStatus)
    }

    @Test func failuresBackOffUntilTheRetriesAreUsedUp() {
        var planner = Self.planner(retries: 2)
        let failure = BatchFetchError(.connection, "reset")
        #expect(planner.failed(failure) == .retry(failure, RetryDelay(seconds: 1, jitter: true)))
        #expect(planner.failed(failure) == .retry(failure, RetryDelay(seconds: 2, jitter: true)))
        #expect(planner.failed(failure) == .stop(failure))
        #expect(planner.stopReason == failure)
        #expect(planner.claim() == nil)
    }
}

/// What the end of one range request means, without sockets.
@Suite struct RangeEndTests {
    static let range: Range<Int64> = 0..<(4 * SegmentPlannerTests.mib)

    /// A planner with `range` claimed and released as written through `written`.
    static func released(written: Int64, retries: Int = 2) -> SegmentPlanner {
        var planner = SegmentPlannerTests.planner(retries: retries)
        _ = planner.claim()
        planner.release(range, writtenThrough: written)
        return planner
    }

    @Test func aWholeRangeOrAShedOneIsAccepted() {
        var whole = Self.released(written: Self.range.upperBound)
        #expect(whole.ended(Self.range, .init(head: .accept, status: 206, written: Self.range.upperBound)) == (.accept, nil))
        var shed = Self.released(written: 1000)
        #expect(shed.ended(Self.range, .init(head: .accept, status: 206, written: 1000, shed: true)) == (.accept, nil))
    }

    @Test func aShortRangeIsRetriedAndRecorded() {
        var planner = Self.released(written: 1000)
        let (verdict, recorded) = planner.ended(Self.range, .init(head: .accept, status: 206, written: 1000))
        guard case .retry(let failure, _) = verdict else {
            Issue.record("a short range should be retried, got \(verdict)")
            return
        }
        #expect(failure.code == .connection && failure.message.contains("closed at 1000"))
        #expect(recorded == failure)
        let (timeout, _) = planner.ended(Self.range, .init(head: .accept, status: 206, written: 1000, failure: .timedOut))
        guard case .retry(let idle, _) = timeout else {
            Issue.record("a timed-out range should be retried, got \(timeout)")
            return
        }
        #expect(idle.code == .timeout)
    }

    @Test func hardEndsStopSegmentingWithoutBlamingTheServerForOurDisk() {
        var disk = Self.released(written: 0)
        let full = BatchFetchError(.diskFull, "no space")
        #expect(disk.ended(Self.range, .init(head: .accept, status: 206, written: 0, diskFailure: full)) == (.stop(full), nil))
        #expect(disk.stopReason == full && disk.claim() == nil)

        var late = Self.released(written: 0)
        #expect(late.ended(Self.range, .init(head: .accept, status: 206, written: 0, pastDeadline: true)).verdict
            == .stop(BatchFetchError(.deadlineExceeded, "job deadline exceeded")))

        var refused = Self.released(written: 0)
        let changed = BatchFetchError(.remoteChanged, "ETag changed")
        #expect(refused.ended(Self.range, .init(head: .stop(changed), status: 206, written: 0)) == (.stop(changed), changed))

        var tls = Self.released(written: 0)
        #expect(tls.ended(Self.range, .init(written: 0, failure: .tls("untrusted"))).verdict == .stop(BatchFetchError(.tls, "for bytes 0-4194303: untrusted")))
    }

    @Test func aCancelStopsWithTheReasonAnotherConnectionRecorded() {
        var planner = Self.released(written: 0)
        let reason = BatchFetchError(.rangeNotHonoured, "206 for the wrong range")
        planner.stop(reason)
        #expect(planner.ended(Self.range, .init(written: 0, failure: .cancelled)) == (.stop(reason), nil))
        var interrupted = Self.released(written: 0)
        #expect(interrupted.ended(Self.range, .init(written: 0, failure: .cancelled)).verdict.failureCode == .interrupted)
    }

    @Test func aRetryWhoseWaitCouldPassTheDeadlineStopsInstead() {
        var planner = Self.released(written: 0)
        let busy = BatchFetchError(.httpStatus, "HTTP 503")
        let (verdict, recorded) = planner.ended(Self.range, .init(head: .retryable(busy, retryAfter: 30), status: 503, written: 0,
                                                                  remaining: 5))
        #expect(verdict.failureCode == .deadlineExceeded && recorded == busy)
    }
}

private extension SegmentPlanner.Verdict {
    var failureCode: ErrorCode? {
        if case .stop(let failure) = self { return failure.code }
        return nil
    }
}

extension SegmentPlanner {
    /// Claims the lowest free range for the next connection key (tests of one range at a time).
    mutating func claim() -> Range<Int64>? {
        claim(for: (inFlight.keys.max() ?? -1) + 1)
    }

    /// Releases the claim on `range`, whichever connection holds it.
    mutating func release(_ range: Range<Int64>, writtenThrough written: Int64) {
        guard let key = inFlight.first(where: { $0.value.range == range })?.key else { return }
        _ = release(key, writtenThrough: written)
    }
}
