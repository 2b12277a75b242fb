@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import Testing

/// Work stealing, hedged tails, several mirrors and piece hashes as decisions of the
/// ``SegmentPlanner``, event by event, without sockets or sleeps: time is a number the test
/// passes (Docs/Mirrors.md).
@Suite struct MirrorPlanningTests {
    static let mib: Int64 = 1 << 20
    static let retry = RetryPolicy(retries: 2, backoff: 1, backoffMax: 8, retryAfterMax: 60)

    static func planner(total: Int64, piece: Int64, mirrors: [Int] = [0], pieces: PieceHashes? = nil,
                        minimumSteal: Int64 = 1 << 20) -> SegmentPlanner {
        SegmentPlanner(configuration: .init(total: total, pieceSize: piece, ifRange: "\"a\"", retry: retry, mirrors: mirrors,
                                            pieces: pieces, minimumSteal: minimumSteal))
    }

    static func head(_ status: Int, _ headers: [String: String]) -> TransportResponseHead {
        TransportResponseHead(status: status, headers: headers)
    }

    @Test func connectionsAreDealtRoundRobinWithinPerHost() {
        #expect(SegmentPlanner.deal(connections: 4, hosts: ["a", "b"], perHost: 2) == [0, 1, 0, 1])
        #expect(SegmentPlanner.deal(connections: 6, hosts: ["a", "b", "c"], perHost: 2) == [0, 1, 2, 0, 1, 2])
        // Two mirrors on one host share its slots.
        #expect(SegmentPlanner.deal(connections: 4, hosts: ["a", "a"], perHost: 2) == [0, 1])
        #expect(SegmentPlanner.deal(connections: 4, hosts: ["a"], perHost: 8) == [0, 0, 0, 0])
        #expect(SegmentPlanner.deal(connections: 5, hosts: ["a", "b"], perHost: 2) == [0, 1, 0, 1])
    }

    @Test func anIdleConnectionTakesTheBackHalfOfTheLargestUnwrittenRange() {
        var planner = Self.planner(total: 64 * Self.mib, piece: 16 * Self.mib)
        for key in 0..<4 { #expect(planner.next(for: key, mirror: 0, now: 0) == .range(Int64(key) * 16 * Self.mib..<Int64(key + 1) * 16 * Self.mib)) }
        planner.progress(0, writtenThrough: 16 * Self.mib, now: 1)
        planner.progress(1, writtenThrough: 20 * Self.mib, now: 1)  // 12 MiB left
        planner.progress(2, writtenThrough: 34 * Self.mib, now: 1)  // 14 MiB left: the largest
        planner.progress(3, writtenThrough: 60 * Self.mib, now: 1)
        #expect(planner.release(0, writtenThrough: 16 * Self.mib)?.range == 0..<(16 * Self.mib))
        guard case .steal(let victim, let at) = planner.next(for: 0, mirror: 0, now: 1) else {
            Issue.record("no steal proposed")
            return
        }
        #expect(victim == 2 && at == 41 * Self.mib)
        // Nothing is taken until the victim's transfer was cut: the claim is the second step.
        #expect(planner.inFlight[0] == nil)
        #expect(planner.stole(for: 0, mirror: 0, victim: 2, at: at, now: 1) == (41 * Self.mib)..<(48 * Self.mib))
        #expect(planner.inFlight[2]?.range == (32 * Self.mib)..<(41 * Self.mib) && planner.stolen == 1)
        // The victim ends at the cut: its range is whole, no failure.
        let released = planner.release(2, writtenThrough: 41 * Self.mib)!
        #expect(planner.ended(released.range, .init(head: .accept, status: 206, written: 41 * Self.mib, failure: .cancelled)).verdict == .accept)
        // A steal whose victim moved on meanwhile takes nothing.
        #expect(planner.stole(for: 5, mirror: 0, victim: 2, at: 45 * Self.mib, now: 1) == nil)
    }

    @Test func aRangeTooShortToSplitIsNotStolen() {
        var planner = Self.planner(total: 4 * Self.mib, piece: 2 * Self.mib, minimumSteal: Self.mib)
        _ = planner.next(for: 0, mirror: 0, now: 0)
        _ = planner.next(for: 1, mirror: 0, now: 0)
        planner.progress(1, writtenThrough: 3 * Self.mib, now: 0.5)  // 1 MiB left: halves of 512 KiB
        _ = planner.release(0, writtenThrough: 2 * Self.mib)
        #expect(planner.next(for: 0, mirror: 0, now: 0.5) == .wait)
        _ = planner.release(1, writtenThrough: 4 * Self.mib)
        #expect(planner.next(for: 0, mirror: 0, now: 0.6) == .finished && planner.isComplete)
    }

    /// Two connections; the second stops with 1.75 MiB left (too little to steal) at 1 s: once
    /// its last 2 s are below a quarter of the median rate, the idle one asks for the rest too,
    /// the first to finish keeps it and the other's transfer is ended.
    @Test func aSlowLastRangeIsHedgedOnceAndTheFirstToFinishKeepsIt() {
        var planner = Self.planner(total: 8 * Self.mib, piece: 4 * Self.mib)
        _ = planner.next(for: 0, mirror: 0, now: 0)
        _ = planner.next(for: 1, mirror: 0, now: 0)
        for step in 1...4 {
            planner.progress(0, writtenThrough: Int64(step) * Self.mib, now: Double(step) * 0.25)
            planner.progress(1, writtenThrough: 4 * Self.mib + Int64(step) * 576 * 1024, now: Double(step) * 0.25)
        }
        _ = planner.release(0, writtenThrough: 4 * Self.mib)
        // Its last 2 s still hold some of its progress.
        #expect(planner.next(for: 0, mirror: 0, now: 2.5) == .wait)
        #expect(planner.next(for: 0, mirror: 0, now: 2.9) == .wait)
        let rest = (6 * Self.mib + 256 * 1024)..<(8 * Self.mib)
        #expect(planner.next(for: 0, mirror: 0, now: 3.0) == .hedge(victim: 1, range: rest, mirror: 0))
        #expect(planner.hedged == 1)
        // What the victim wrote is done; both now fetch the rest; no second hedge.
        #expect(planner.done.ranges == [0..<rest.lowerBound])
        #expect(planner.next(for: 2, mirror: 0, now: 9) == .wait)
        let won = planner.release(0, writtenThrough: rest.upperBound)!
        #expect(won.beat == 1 && !won.superseded)
        let lost = planner.release(1, writtenThrough: rest.lowerBound)!
        #expect(lost.superseded && lost.beat == nil)
        #expect(planner.isComplete && planner.next(for: 0, mirror: 0, now: 9) == .finished)
    }

    /// Ranges that arrive in bursts seconds apart (URLSession on a loaded machine) still give
    /// their connections a rate: the sample before the window is kept as its baseline.
    @Test func burstsSecondsApartStillMakeARate() {
        var planner = Self.planner(total: 8 * Self.mib, piece: 2 * Self.mib, mirrors: [0, 1])
        _ = planner.next(for: 0, mirror: 0, now: 0)
        _ = planner.next(for: 1, mirror: 1, now: 0)
        // Connection 1 writes in two bursts 10 s apart, then stops with 1 MiB left (too little to steal).
        planner.progress(1, writtenThrough: 2 * Self.mib + Self.mib / 2, now: 0.1)
        planner.progress(1, writtenThrough: 3 * Self.mib, now: 10)
        // Connection 0 writes each 2 MiB range in one burst, 8 s apart.
        for (index, at) in [(0, 1.0), (1, 9.0), (2, 17.0)] {
            if index > 0 { _ = planner.next(for: 0, mirror: 0, now: at - 0.5) }
            let range = planner.inFlight[0]!.range
            planner.progress(0, writtenThrough: range.upperBound, now: at)
            _ = planner.release(0, writtenThrough: range.upperBound)
        }
        // Connection 1 wrote nothing since 10 s: below a quarter of the median, it is hedged.
        guard case .hedge(let victim, _, _) = planner.next(for: 0, mirror: 0, now: 17.5) else {
            Issue.record("no hedge: a burst left its connection without a rate")
            return
        }
        #expect(victim == 1)
    }

    @Test func aHedgeThatLosesLeavesTheVictimsBytes() {
        var planner = Self.planner(total: 2 * Self.mib, piece: 2 * Self.mib)
        _ = planner.next(for: 0, mirror: 0, now: 0)
        planner.progress(0, writtenThrough: Self.mib + Self.mib / 2, now: 0.5)
        planner.progress(1, writtenThrough: 0, now: 0.5)  // no range: ignored
        _ = planner.next(for: 1, mirror: 0, now: 0)
        #expect(planner.next(for: 1, mirror: 0, now: 3) == .hedge(victim: 0, range: (Self.mib + Self.mib / 2)..<(2 * Self.mib), mirror: 0))
        let won = planner.release(0, writtenThrough: 2 * Self.mib)!
        #expect(won.beat == 1)
        #expect(planner.release(1, writtenThrough: Self.mib + Self.mib / 2)!.superseded)
        #expect(planner.done.ranges == [0..<(2 * Self.mib)] && planner.servedBy[0]?.count == 2 * Self.mib)
    }

    /// A 4 MiB file in 2 MiB ranges, both claimed on mirror 0 at 0 s and written through 1 MiB
    /// and 3 MiB by 0.5 s; `hedgeMirror` as a `sources: first` job with proof has it.
    static func twoConnections(hedgeMirror: Int? = nil) -> SegmentPlanner {
        var planner = SegmentPlanner(configuration: .init(total: 4 * mib, pieceSize: 2 * mib, ifRange: "\"a\"",
                                                          retry: retry, hedgeMirror: hedgeMirror))
        _ = planner.next(for: 0, mirror: 0, now: 0)
        _ = planner.next(for: 1, mirror: 0, now: 0)
        planner.progress(0, writtenThrough: mib, now: 0.5)
        planner.progress(1, writtenThrough: 3 * mib, now: 0.5)
        return planner
    }

    /// Every connection busy with a range and one of them lagging: one more connection is
    /// wanted, to the hedging mirror; none while a connection is idle or nothing lags.
    @Test func whenEveryConnectionIsBusyALaggingRangeWantsOneMore() {
        var planner = Self.twoConnections(hedgeMirror: 1)
        #expect(planner.extraHedge(connections: 2, now: 1) == nil)  // nothing lags for 2 s yet
        planner.progress(1, writtenThrough: 3 * Self.mib + 1, now: 2.9)
        #expect(planner.extraHedge(connections: 2, now: 3) == 1)
        #expect(planner.extraHedge(connections: 3, now: 3) == nil)  // a connection is idle
        // Without a hedging mirror the one mirror serves the extra connection too.
        var one = Self.twoConnections()
        one.progress(1, writtenThrough: 3 * Self.mib + 1, now: 2.9)
        #expect(one.extraHedge(connections: 2, now: 3) == 0)
    }

    /// A hedge that won moves on to hedge another range before the first one's loser gives its
    /// range back: that loser's release leaves the new pair alone, so the next win still ends
    /// its victim (a stalled victim left unpaired waited out the whole idle timeout).
    @Test func aLosersLateReleaseLeavesItsWinnersNextHedgeAlone() {
        var planner = Self.twoConnections(hedgeMirror: 1)
        #expect(planner.next(for: 2, mirror: 0, now: 3) == .hedge(victim: 0, range: Self.mib..<(2 * Self.mib), mirror: 1))
        #expect(planner.release(2, writtenThrough: 2 * Self.mib)?.beat == 0)
        #expect(planner.next(for: 2, mirror: 0, now: 3.1) == .hedge(victim: 1, range: (3 * Self.mib)..<(4 * Self.mib), mirror: 1))
        // The first loser ends only now.
        #expect(planner.release(0, writtenThrough: Self.mib)?.superseded == true)
        #expect(planner.inFlight[2]?.rival == 1 && planner.inFlight[1]?.rival == 2)
        #expect(planner.release(2, writtenThrough: 4 * Self.mib)?.beat == 1)
        #expect(planner.inFlight[1]?.superseded == true)
    }

    /// With two mirrors, a lagging range is hedged by a connection on the other one only: a
    /// hedge on the mirror that stalls would stall too, and a range is hedged once.
    @Test func withTwoMirrorsAHedgeGoesToTheOtherMirror() {
        var planner = Self.planner(total: 4 * Self.mib, piece: 2 * Self.mib, mirrors: [0, 1])
        _ = planner.next(for: 0, mirror: 0, now: 0)
        _ = planner.next(for: 1, mirror: 1, now: 0)
        planner.progress(0, writtenThrough: Self.mib, now: 0.5)
        planner.progress(1, writtenThrough: 3 * Self.mib, now: 0.5)
        _ = planner.release(1, writtenThrough: 4 * Self.mib)
        planner.progress(0, writtenThrough: Self.mib + 1, now: 1)  // then nothing
        #expect(planner.next(for: 3, mirror: 0, now: 4) == .wait)
        #expect(planner.next(for: 1, mirror: 1, now: 4) == .hedge(victim: 0, range: (Self.mib + 1)..<(2 * Self.mib), mirror: 1))
    }

    /// A `sources: first` job with proof of one content hedges onto its next mirror; when that
    /// mirror fails, it is dropped and hedges ask the job's own mirror again — segmenting goes on.
    @Test func aSourcesFirstJobHedgesOntoItsNextMirror() {
        var planner = SegmentPlanner(configuration: .init(total: 2 * Self.mib, pieceSize: 2 * Self.mib, ifRange: "\"a\"",
                                                          retry: Self.retry, hedgeMirror: 1))
        _ = planner.next(for: 0, mirror: 0, now: 0)
        planner.progress(0, writtenThrough: Self.mib, now: 0.5)
        _ = planner.next(for: 1, mirror: 0, now: 0)
        let rest = Self.mib..<(2 * Self.mib)
        #expect(planner.next(for: 1, mirror: 0, now: 3) == .hedge(victim: 0, range: rest, mirror: 1))
        #expect(planner.inFlight[1]?.mirror == 1)
        let lost = planner.release(1, writtenThrough: Self.mib)!
        let gone = BatchFetchError(.httpStatus, "HTTP 404")
        #expect(planner.ended(lost.range, .init(head: .stop(gone), status: 404, written: Self.mib), mirror: 1).verdict == .leave(gone))
        #expect(planner.stopReason == nil && planner.dropped[1] == gone && planner.liveMirrors == [0])
        #expect(TransferPolicy.hedgeMirror(drawnFrom: [0], count: 2, proven: true) == 1)
        #expect(TransferPolicy.hedgeMirror(drawnFrom: [0], count: 2, proven: false) == nil)
        #expect(TransferPolicy.hedgeMirror(drawnFrom: [0, 1], count: 2, proven: true) == nil)
        #expect(TransferPolicy.hedgeMirror(drawnFrom: [1], count: 2, proven: true) == nil)
    }

    @Test func eachMirrorIsJudgedByItsOwnValidatorAndSize() {
        var planner = Self.planner(total: 1000, piece: 100, mirrors: [0, 1])
        let range: Range<Int64> = 100..<200
        // The second mirror's first answer carries no If-Range to check: its ETag is learned.
        #expect(planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000", "ETag": "\"b\""]), for: range, mirror: 1) == .accept)
        planner.learn(1, from: Self.head(206, ["ETag": "\"b\""]))
        #expect(planner.validators[1] == "\"b\"")
        #expect(planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000", "ETag": "\"b\""]), for: range, mirror: 1) == .accept)
        guard case .stop(let changed) = planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1000", "ETag": "\"c\""]),
                                                      for: range, mirror: 1) else {
            Issue.record("another ETag accepted")
            return
        }
        #expect(changed.code == .remoteChanged)
        // Another size on the second mirror: that mirror is the odd one.
        guard case .otherSize(1001, let size) = planner.judge(Self.head(206, ["Content-Range": "bytes 100-199/1001"]), for: range, mirror: 1) else {
            Issue.record("another size accepted")
            return
        }
        #expect(size.code == .sizeMismatch && size.message.contains("1001"))
        // A redirect is the owner's to follow (the job's redirect policy), not a failure.
        #expect(planner.judge(Self.head(302, ["Location": "https://cdn.example/f"]), for: range, mirror: 1)
            == .redirect(location: "https://cdn.example/f"))
    }

    /// Without a pinned size the majority decides which mirror is the odd one: two mirrors
    /// serving another size than the first stop segmenting (the job fails the first over);
    /// one that disagrees alone is dropped; a pinned size keeps the first whatever the others say.
    @Test func theMajorityOfMirrorsDecidesTheOddOneUnlessTheSizeIsPinned() {
        let odd = BatchFetchError(.sizeMismatch, "this mirror serves 900 bytes")
        func otherSize(_ planner: inout SegmentPlanner, mirror: Int, key: Int) -> SegmentPlanner.Verdict {
            let range = planner.claim(for: key, mirror: mirror)!
            _ = planner.release(key, writtenThrough: range.lowerBound)
            return planner.ended(range, .init(head: .otherSize(900, odd), status: 206, written: range.lowerBound), mirror: mirror).verdict
        }
        var planner = Self.planner(total: 10 * Self.mib, piece: Self.mib, mirrors: [0, 1, 2])
        #expect(otherSize(&planner, mirror: 1, key: 1) == .leave(odd))
        #expect(planner.stopReason == nil && planner.liveMirrors == [0, 2])
        guard case .stop(let outvoted) = otherSize(&planner, mirror: 2, key: 2) else {
            Issue.record("the first mirror kept against two others")
            return
        }
        #expect(outvoted.code == .sizeMismatch && outvoted.message.contains("mirrors 1, 2 serve 900"))
        #expect(planner.stopReason == outvoted && planner.dropped.isEmpty)
        // Mirror 1 agrees with the first: two against one, mirror 2 is the odd one.
        var agreed = Self.planner(total: 10 * Self.mib, piece: Self.mib, mirrors: [0, 1, 2])
        agreed.learn(1, from: Self.head(206, ["ETag": "\"b\""]))
        #expect(otherSize(&agreed, mirror: 2, key: 2) == .leave(odd))
        // A pinned size is the truth.
        var pinned = SegmentPlanner(configuration: .init(total: 10 * Self.mib, pieceSize: Self.mib, ifRange: "\"a\"", retry: Self.retry,
                                                         mirrors: [0, 1, 2], sizePinned: true))
        #expect(otherSize(&pinned, mirror: 1, key: 1) == .leave(odd))
        #expect(otherSize(&pinned, mirror: 2, key: 2) == .leave(odd))
        #expect(pinned.liveMirrors == [0] && pinned.stopReason == nil)
    }

    /// A repair of a whole body's bad pieces: without the sidecar's validator (another mirror
    /// serves it) no If-Range is sent until that mirror's first 206; a piece bad before is bad
    /// twice at its first failure here.
    @Test func aRepairLearnsItsValidatorAndCountsTheBodysBadPieces() throws {
        let pieces = PieceHashes(length: Self.mib, sha256: Array(repeating: String(repeating: "0", count: 64), count: 2))
        var planner = SegmentPlanner(configuration: .init(total: 2 * Self.mib, pieceSize: Self.mib, ifRange: "", retry: Self.retry,
                                                          mirrors: [1], pieces: pieces, badBefore: [1]),
                                     done: ByteRanges([0..<Self.mib]))
        #expect(planner.validators.isEmpty)
        #expect(planner.piecesToCheck() == [0])
        #expect(planner.pieceChecked(0, matches: true) == nil)
        #expect(planner.claim(for: 0, mirror: 1) == Self.mib..<(2 * Self.mib))
        planner.learn(1, from: Self.head(206, ["ETag": "\"b\""]))
        #expect(planner.validators == [1: "\"b\""])
        _ = planner.release(0, writtenThrough: 2 * Self.mib)
        #expect(planner.piecesToCheck() == [1])
        let checked = planner.pieceChecked(1, matches: false)
        let again = try #require(checked)
        #expect(again.fatal?.code == .checksumMismatch)
        #expect(TransferPolicy.repairMirrors(current: 0, count: 3) == [1, 2])
        #expect(TransferPolicy.repairMirrors(current: 2, count: 3) == [2])
    }

    @Test func aMirrorThatFailsIsDroppedWhileAnotherIsLive() {
        var planner = Self.planner(total: 10 * Self.mib, piece: Self.mib, mirrors: [0, 1])
        let first = planner.claim(for: 0, mirror: 1)!
        let released = planner.release(0, writtenThrough: first.lowerBound)!
        let odd = BatchFetchError(.sizeMismatch, "this mirror serves 1001 bytes")
        #expect(planner.ended(released.range, .init(head: .stop(odd), status: 206, written: first.lowerBound), mirror: 1)
            == (.leave(odd), odd))
        #expect(planner.dropped[1] == odd && planner.liveMirrors == [0] && planner.stopReason == nil)
        #expect(planner.claim(for: 1, mirror: 1) == nil)
        #expect(planner.claim(for: 2, mirror: 0) == first)
        // The last mirror failing stops segmenting (the single stream takes over).
        let gone = BatchFetchError(.httpStatus, "HTTP 404")
        _ = planner.release(2, writtenThrough: first.lowerBound)
        #expect(planner.ended(first, .init(head: .stop(gone), status: 404, written: first.lowerBound), mirror: 0) == (.stop(gone), gone))
        // Retries are counted per mirror: one failing mirror's retries do not use up another's.
        var counted = Self.planner(total: 10 * Self.mib, piece: Self.mib, mirrors: [0, 1])
        let reset = BatchFetchError(.connection, "reset")
        #expect(counted.failed(reset, mirror: 1) == .retry(reset, RetryDelay(seconds: 1, jitter: true)))
        #expect(counted.failed(reset, mirror: 1) == .retry(reset, RetryDelay(seconds: 2, jitter: true)))
        #expect(counted.failed(reset, mirror: 0) == .retry(reset, RetryDelay(seconds: 1, jitter: true)))
        #expect(counted.failed(reset, mirror: 1) == .leave(reset))
        #expect(counted.liveMirrors == [0])
    }

    @Test func aBadPieceIsFetchedAgainAloneAndItsMirrorDropped() throws {
        let pieces = PieceHashes(length: Self.mib, sha256: Array(repeating: String(repeating: "0", count: 64), count: 4))
        var planner = Self.planner(total: 4 * Self.mib, piece: 2 * Self.mib, mirrors: [0, 1], pieces: pieces)
        let front = planner.claim(for: 0, mirror: 0)!
        let back = planner.claim(for: 1, mirror: 1)!
        _ = planner.release(1, writtenThrough: back.upperBound)
        #expect(planner.piecesToCheck() == [2, 3])
        #expect(planner.piecesToCheck().isEmpty)  // handed out once
        #expect(planner.pieceChecked(2, matches: true) == nil)
        let checked = planner.pieceChecked(3, matches: false)
        let bad = try #require(checked)
        #expect(bad.index == 3 && bad.bytes == (3 * Self.mib)..<(4 * Self.mib) && bad.mirrors == [1] && bad.fatal == nil)
        #expect(planner.piecesRepaired == 1 && planner.dropped[1] != nil)
        #expect(planner.done.ranges == [(2 * Self.mib)..<(3 * Self.mib)])
        // Only the bad piece is asked again, of the other mirror.
        #expect(planner.claim(for: 1, mirror: 1) == nil)
        #expect(planner.claim(for: 2, mirror: 0) == (3 * Self.mib)..<(4 * Self.mib))
        _ = planner.release(2, writtenThrough: 4 * Self.mib)
        _ = planner.release(0, writtenThrough: front.upperBound)
        #expect(Set(planner.piecesToCheck()) == [0, 1, 3])
        // The prefix the whole-file hash follows stops at the first piece not verified.
        #expect(planner.hashablePrefix == 0 && !planner.isComplete)
        for index in [0, 1, 3] { #expect(planner.pieceChecked(index, matches: true) == nil) }
        #expect(planner.hashablePrefix == 4 * Self.mib && planner.isComplete)
    }

    @Test func withOneMirrorABadPieceIsFetchedOnceMoreAndBadTwiceFails() throws {
        let pieces = PieceHashes(length: Self.mib, sha256: Array(repeating: String(repeating: "0", count: 64), count: 2))
        var planner = Self.planner(total: 2 * Self.mib, piece: 2 * Self.mib, pieces: pieces)
        _ = planner.claim(for: 0)
        _ = planner.release(0, writtenThrough: 2 * Self.mib)
        #expect(planner.piecesToCheck() == [0, 1])
        let once = planner.pieceChecked(1, matches: false)
        #expect(once != nil && once?.fatal == nil)
        #expect(planner.liveMirrors == [0])
        #expect(planner.claim(for: 0) == Self.mib..<(2 * Self.mib))
        _ = planner.release(0, writtenThrough: 2 * Self.mib)
        #expect(planner.piecesToCheck() == [1])
        let again = planner.pieceChecked(1, matches: false)
        let twice = try #require(again)
        #expect(twice.fatal?.code == .checksumMismatch && planner.stopReason?.code == .checksumMismatch)
    }

    @Test func whileAPieceIsCheckedTheIdleConnectionsWait() {
        let pieces = PieceHashes(length: Self.mib, sha256: [String(repeating: "0", count: 64)])
        var planner = Self.planner(total: Self.mib, piece: Self.mib, pieces: pieces)
        _ = planner.claim(for: 0)
        _ = planner.release(0, writtenThrough: Self.mib)
        #expect(planner.piecesToCheck() == [0])
        #expect(planner.next(for: 1, mirror: 0, now: 0) == .wait)
        _ = planner.pieceChecked(0, matches: false)
        #expect(planner.next(for: 1, mirror: 0, now: 0) == .range(0..<Self.mib))
    }

    @Test func sourcesAllNeedsProofOfOneContent() {
        #expect(TransferPolicy.sourceMirrors(.all, current: 0, count: 3, proven: true) == ([0, 1, 2], nil))
        // Mirrors before the current one already failed over.
        #expect(TransferPolicy.sourceMirrors(.all, current: 1, count: 3, proven: true).mirrors == [1, 2])
        let unproven = TransferPolicy.sourceMirrors(.all, current: 0, count: 3, proven: false)
        #expect(unproven.mirrors == [0] && unproven.warning?.contains("pinned sha256") == true)
        #expect(TransferPolicy.sourceMirrors(.first, current: 0, count: 3, proven: true) == ([0], nil))
        #expect(TransferPolicy.connections(segments: 4, hosts: 2, perHost: 2) == 4)
        #expect(TransferPolicy.connections(segments: 4, hosts: 1, perHost: 2) == 2)
        // Without backpressure a range is never split (its cancel would wait out the trap).
        #expect(TransferPolicy.minimumSteal(pieceSize: 4 * Self.mib, backpressure: false) == 4 * Self.mib)
        #expect(TransferPolicy.minimumSteal(pieceSize: 16 * Self.mib, backpressure: true) == 2 * Self.mib)
    }

    @Test func pieceHashesFitTheirFile() {
        let pieces = PieceHashes(length: 4 * Self.mib, sha256: Array(repeating: "", count: 3))
        #expect(pieces.fits(9 * Self.mib) && pieces.fits(12 * Self.mib) && !pieces.fits(12 * Self.mib + 1) && !pieces.fits(8 * Self.mib))
        #expect(pieces.range(of: 2, total: 9 * Self.mib) == (8 * Self.mib)..<(9 * Self.mib))
        #expect(PieceHashes.allows(256 << 10) && PieceHashes.allows(64 << 20))
        #expect(!PieceHashes.allows(128 << 10) && !PieceHashes.allows(3 << 20) && !PieceHashes.allows(128 << 20))
    }
}
