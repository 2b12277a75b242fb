@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import BatchFetchSpec
import Crypto
import Foundation
import TestOrigin
import Testing

/// Many mirrors at once, piece hashes, work stealing and hedged tails against two TestOrigins on
/// loopback (127.0.0.1 and 127.0.0.2: two hosts, so `per_host` counts each), on the transport
/// under test (Docs/Mirrors.md). Stalls are forced by the origins' gates, never by timing.
@Suite struct MirrorsTests {
    static let size: Int64 = 16 << 20
    static let content = OriginContent.generated(size: size, seed: 54)

    /// The harness's origin and a second one on another loopback address, both serving `/f.bin`.
    private func world(_ second: OriginFile, first: OriginFile = OriginFile(content: content)) async throws -> (Harness, TestOrigin) {
        let world = try await Harness()
        let other = try await TestOrigin.start(host: "127.0.0.2")
        world.origin.serve("/f.bin", first)
        other.serve("/f.bin", second)
        return (world, other)
    }

    /// A job with both mirrors, `sources: all`, four segments of 2 MiB ranges: two connections to
    /// each host. `per_host: 7`, a limit no other test uses: on URLSession the tests share one
    /// session per limit, whose per-host cap other tests' held requests to 127.0.0.1 would take.
    private func manifest(_ other: TestOrigin, extra: String = "", pinned: Bool = true, timeout: String = "60s") -> String {
        """
        version: 1
        per_host: 7
        defaults: {retries: 2, backoff: 50ms, backoff_max: 200ms, timeout: \(timeout)}
        jobs:
          - id: f
            urls: ['{origin}/f.bin', '\(other.url("/f.bin"))']
            dest: f.bin
            size: \(Self.size)
            segments: 4
            sources: all
        \(pinned ? "    checksum: sha256:\(Harness.sha256(Self.content))\n" : "")\(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    /// 2 MiB ranges whichever the transport; no hedging (the tests count bytes) unless `hedging`.
    private static func options(hedging: Bool = false) -> RunOptions {
        var options = RunOptions()
        options.segmentRangeSize = 2 << 20
        options.hedging = hedging
        return options
    }

    /// Sha256 of each piece of `content`.
    static func pieces(_ content: OriginContent, length: Int64) -> [String] {
        stride(from: Int64(0), to: content.size, by: Int(length)).map { start in
            SHA256.hash(data: content.bytes(in: start..<min(content.size, start + length))).map { String(format: "%02x", $0) }.joined()
        }
    }

    @Test func bothMirrorsServeOneFileEachRangeWithItsOwnValidator() async throws {
        var paced = OriginFile(content: Self.content)
        paced.trickleBytesPerSecond = 8 << 20  // both mirrors busy at once
        var second = paced
        second.version = 3  // another ETag and Last-Modified
        let (world, other) = try await world(second, first: paced)
        var events: [RunEvent] = []
        let handle = try world.start(manifest(other), options: Self.options())
        for await event in handle.events { events.append(event) }
        let report = await handle.report
        let (servedFirst, servedSecond) = (world.origin.bytesServed("/f.bin"), other.bytesServed("/f.bin"))
        let secondRequests = other.requests("/f.bin")
        let firstValidators = Set(world.origin.requests("/f.bin").compactMap { $0.header("if-range") })
        let digest = try world.sha256(ofFile: "f.bin")
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect(job.mirrorsUsed == [0, 1] && job.segments == 4)
        #expect(servedFirst > 0 && servedSecond > 0)
        #expect(servedFirst + servedSecond == Self.size)
        // The second mirror's first range on each connection proves nothing yet; every later one
        // carries its own ETag, not the first mirror's.
        let secondValidators = secondRequests.compactMap { $0.header("if-range") }
        #expect(secondRequests.count - secondValidators.count <= 2)
        #expect(Set(secondValidators).count == 1 && firstValidators.count == 1 && firstValidators.isDisjoint(with: secondValidators))
        #expect(!events.contains { if case .warning = $0 { true } else { false } })
    }

    @Test func withoutProofOfOneContentOneMirrorServesAndAWarningSaysWhy() async throws {
        let (world, other) = try await world(OriginFile(content: Self.content))
        var warnings: [String] = []
        let handle = try world.start(manifest(other, pinned: false), options: Self.options())
        for await event in handle.events { if case .warning(let text) = event { warnings.append(text) } }
        let report = await handle.report
        let servedSecond = other.bytesServed("/f.bin")
        try? await other.shutdown()
        await world.close()

        #expect(report.jobs[0].status == .downloaded)
        #expect(servedSecond == 0 && report.jobs[0].mirrorsUsed == nil)
        #expect(warnings.count == 1 && warnings[0].contains("'sources: all' without a pinned sha256"))
    }

    @Test func aMirrorOfAnotherSizeIsDroppedWithAWarning() async throws {
        let (world, other) = try await world(OriginFile(content: .generated(size: Self.size + 1, seed: 54)))
        var warnings: [String] = []
        let handle = try world.start(manifest(other), options: Self.options())
        for await event in handle.events { if case .warning(let text) = event { warnings.append(text) } }
        let report = await handle.report
        let digest = try world.sha256(ofFile: "f.bin")
        let secondRequests = other.requests("/f.bin").count
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded && digest == Harness.sha256(Self.content))
        #expect(job.mirrorIndex == 0 && job.mirrorsUsed == nil)
        // Each of its two connections learns it at its first answer; then none asks again.
        #expect(secondRequests <= 2)
        #expect(warnings.count == 1 && warnings[0].contains("mirror 1") && warnings[0].contains("\(Self.size + 1) bytes"))
        #expect(job.attemptLog?.contains { $0.code == .sizeMismatch && $0.mirrorIndex == 1 } == true)
    }

    /// The second mirror serves other bytes of the same size: with piece hashes the first bad
    /// piece drops it, only its pieces are fetched again (from the first), and the attempt log
    /// names the mirror and the piece.
    @Test func aBadPieceIsFetchedAgainAloneFromTheOtherMirror() async throws {
        let pieces = Self.pieces(Self.content, length: 1 << 20)
        let (world, other) = try await world(OriginFile(content: .generated(size: Self.size, seed: 99)))
        let extra = "pieces: {length: 1MiB, sha256: [\(pieces.joined(separator: ", "))]}"
        let report = try await world.run(manifest(other, extra: extra, pinned: false), options: Self.options())
        let digest = try world.sha256(ofFile: "f.bin")
        let (servedFirst, servedSecond) = (world.origin.bytesServed("/f.bin"), other.bytesServed("/f.bin"))
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        let repaired = try #require(job.piecesRepaired)
        let bad = job.attemptLog?.filter { $0.code == .pieceMismatch } ?? []
        #expect(bad.count == repaired && bad.allSatisfy { $0.mirrorIndex == 1 && $0.url.contains("127.0.0.2") })
        #expect(bad.allSatisfy { entry in
            guard let index = entry.index, let bytes = entry.bytes else { return false }
            return bytes == "\(Int64(index) << 20)-\((Int64(index + 1) << 20) - 1)"
        })
        // Every piece it served was bad, and only those are fetched again: the first mirror
        // serves the file once (a range cut short by a steal may overshoot its cut a little).
        #expect(repaired >= 1 && Int64(repaired) << 20 <= servedSecond)
        #expect(servedFirst >= Self.size && servedFirst <= Self.size + (2 << 20))
    }

    /// One mirror serving one piece flipped once: that piece alone is fetched again, from it.
    @Test func withOneMirrorABadPieceIsFetchedOnceMore() async throws {
        let world = try await Harness()
        var file = OriginFile(content: Self.content)
        file.corruptBytes = (5 << 20) + 100..<(5 << 20) + 200
        file.corruptResponses = 1
        world.origin.serve("/f.bin", file)
        let pieces = Self.pieces(Self.content, length: 1 << 20)
        let yaml = world.single("/f.bin", dest: "f.bin", extra: """
            size: \(Self.size)
            segments: 4
            pieces: {length: 1MiB, sha256: [\(pieces.joined(separator: ", "))]}
            """)
        let report = try await world.run(yaml, options: Self.options())
        let digest = try world.sha256(ofFile: "f.bin")
        let served = world.origin.bytesServed("/f.bin")
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect(job.piecesRepaired == 1)
        #expect(job.attemptLog?.contains { $0.code == .pieceMismatch && $0.index == 5 && $0.bytes == "5242880-6291455" } == true)
        #expect(served == Self.size + (1 << 20))
    }

    /// A job on `mirrors` in order, its sha256 pinned to `pinned`, `per_host: 7` (see
    /// ``manifest(_:extra:pinned:timeout:)``).
    private func job(_ mirrors: [String], segments: Int, pinned: OriginContent? = content, size: Bool = true,
                     extra: String = "") -> String {
        """
        version: 1
        per_host: 7
        defaults: {retries: 2, backoff: 50ms, backoff_max: 200ms, timeout: 60s}
        jobs:
          - id: f
            urls: [\(mirrors.map { "'\($0)'" }.joined(separator: ", "))]
            dest: f.bin
            segments: \(segments)
        \(size ? "    size: \(Self.size)\n" : "")\(pinned.map { "    checksum: sha256:\(Harness.sha256($0))\n" } ?? "")\(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    /// Runs `yaml` against the harness's origin and `second`, then shuts both down: the report,
    /// the published file's sha256 and the bytes each origin served.
    private func run(_ yaml: String, _ world: Harness, _ second: TestOrigin) async throws
        -> (RunReport, String, Int64, Int64) {
        let report = try await world.run(yaml, options: Self.options())
        let digest = try world.sha256(ofFile: "f.bin")
        let served = (world.origin.bytesServed("/f.bin"), second.bytesServed("/f.bin"))
        try? await second.shutdown()
        await world.close()
        return (report, digest, served.0, served.1)
    }

    /// Two mirrors serving other bytes of one size, no piece hashes to tell which: the mix fails
    /// the pinned sha256 and the file is fetched whole once more from the first mirror alone
    /// (which serves the pinned bytes); when that fails too, the job fails over to the second.
    @Test func withoutPiecesAMixThatFailsIsFetchedWholeFromOneMirror() async throws {
        let other = OriginContent.generated(size: Self.size, seed: 99)
        for (pinned, served) in [(Self.content, 0), (other, 1)] {
            let (world, second) = try await world(OriginFile(content: other))
            let yaml = job(["{origin}/f.bin", second.url("/f.bin")], segments: 4, pinned: pinned, extra: "sources: all")
            let (report, digest, servedFirst, servedSecond) = try await run(yaml, world, second)

            let job = report.jobs[0]
            #expect(job.status == .downloaded, "\(String(describing: job.error))")
            #expect(digest == Harness.sha256(pinned))
            #expect(job.mirrorIndex == served && job.mirrorsUsed == nil)
            let mismatches = job.attemptLog?.filter { $0.code == .checksumMismatch } ?? []
            // The mix, and when the first mirror's bytes are not the pinned ones, its whole file.
            #expect(mismatches.count == 1 + served)
            if served == 0 {
                // The mix (both mirrors), then the whole file from the first alone.
                #expect(servedSecond > 0 && servedSecond < Self.size)
                #expect(servedFirst + servedSecond == 2 * Self.size)
            } else {
                #expect(servedFirst == 2 * Self.size - servedSecond + Self.size)
            }
        }
    }

    /// A body that arrived whole (`segments: 1`) is held to its piece hashes: the bad piece alone
    /// is fetched again from the next mirror, and the attempt log names the first.
    @Test func aWholeBodysBadPieceIsFetchedAgainAloneFromTheNextMirror() async throws {
        var flipping = OriginFile(content: Self.content)
        flipping.corruptBytes = (5 << 20) + 100..<(5 << 20) + 200
        flipping.corruptResponses = 100
        let (world, second) = try await world(OriginFile(content: Self.content), first: flipping)
        let pieces = Self.pieces(Self.content, length: 1 << 20)
        let yaml = job(["{origin}/f.bin", second.url("/f.bin")], segments: 1, pinned: nil,
                       extra: "pieces: {length: 1MiB, sha256: [\(pieces.joined(separator: ", "))]}")
        let (report, digest, servedFirst, servedSecond) = try await run(yaml, world, second)

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect(job.piecesRepaired == 1 && job.mirrorIndex == 0)
        #expect(job.attemptLog?.filter { $0.code == .pieceMismatch }.map { [$0.mirrorIndex, $0.index] } == [[0, 5]])
        #expect(servedFirst == Self.size && servedSecond == 1 << 20)
    }

    /// One mirror that always serves one piece flipped: the whole body's bad piece is fetched
    /// once more, bad again, and the job fails `checksum_mismatch` with nothing at `dest`.
    @Test func aWholeBodysPieceBadTwiceFailsTheJob() async throws {
        let world = try await Harness()
        var file = OriginFile(content: Self.content)
        file.corruptBytes = (3 << 20)..<(3 << 20) + 1
        file.corruptResponses = 100
        world.origin.serve("/f.bin", file)
        let pieces = Self.pieces(Self.content, length: 1 << 20)
        let yaml = job(["{origin}/f.bin"], segments: 1, pinned: nil,
                       extra: "pieces: {length: 1MiB, sha256: [\(pieces.joined(separator: ", "))]}")
        let report = try await world.run(yaml, options: Self.options())
        let served = world.origin.bytesServed("/f.bin")
        let published = FileManager.default.fileExists(atPath: world.directory.appendingPathComponent("f.bin").path)
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .failed && job.error?.code == .checksumMismatch)
        #expect(job.error?.attempts?.filter { $0.code == .pieceMismatch }.map(\.index) == [3, 3])
        #expect(served == Self.size + (1 << 20) && !published)
    }

    /// Three mirrors, no pinned size: the first serves one byte more than the two others, which
    /// outvote it — its bytes are dropped and the two serve the file (the sha256 proves it).
    @Test func theMajorityOfThreeMirrorsOutvotesTheFirstsSize() async throws {
        let (world, second) = try await world(OriginFile(content: Self.content),
                                              first: OriginFile(content: .generated(size: Self.size + 1, seed: 54)))
        let third = try await TestOrigin.start(host: "127.0.0.3")
        third.serve("/f.bin", OriginFile(content: Self.content))
        let yaml = job(["{origin}/f.bin", second.url("/f.bin"), third.url("/f.bin")], segments: 6, size: false, extra: "sources: all")
        var warnings: [String] = []
        let handle = try world.start(yaml, options: Self.options())
        for await event in handle.events { if case .warning(let text) = event { warnings.append(text) } }
        let report = await handle.report
        let digest = try world.sha256(ofFile: "f.bin")
        let (servedSecond, servedThird) = (second.bytesServed("/f.bin"), third.bytesServed("/f.bin"))
        try? await second.shutdown()
        try? await third.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect(job.attemptLog?.contains { $0.code == .sizeMismatch && $0.message?.contains("mirrors 1, 2 serve \(Self.size)") == true } == true,
                "\(String(describing: job.attemptLog))")
        #expect(job.mirrorsUsed == [1, 2] && servedSecond + servedThird >= Self.size, "\(String(describing: job.attemptLog))")
        // Neither of the two was the odd one.
        #expect(warnings.isEmpty, "\(warnings)")
    }

    /// The second mirror sends its files to a "CDN" (a 302 to another path): its connections
    /// follow it there, the rest of its ranges go straight to the target, and both serve.
    @Test func aMirrorThatRedirectsItsRangesIsFollowed() async throws {
        var redirecting = OriginFile(content: Self.content)
        redirecting.redirectTo = "/cdn/f.bin"
        var paced = OriginFile(content: Self.content)
        paced.trickleBytesPerSecond = 8 << 20  // both mirrors busy at once
        let (world, other) = try await world(redirecting, first: paced)
        other.serve("/cdn/f.bin", paced)
        var warnings: [String] = []
        let handle = try world.start(manifest(other), options: Self.options())
        for await event in handle.events { if case .warning(let text) = event { warnings.append(text) } }
        let report = await handle.report
        let digest = try world.sha256(ofFile: "f.bin")
        let (redirects, servedCDN) = (other.requests("/f.bin").count, other.bytesServed("/cdn/f.bin"))
        let (servedFirst, cdnRequests) = (world.origin.bytesServed("/f.bin"), other.requests("/cdn/f.bin").count)
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect(job.mirrorsUsed == [0, 1] && warnings.isEmpty, "\(warnings)")
        #expect(servedCDN > 0 && servedFirst + servedCDN == Self.size)
        // Each of its connections met the redirect at most once; then the target directly.
        #expect(redirects >= 1 && redirects <= 2 && cdnRequests >= 1)
    }

    /// `sources: first` (the default) with a pinned sha256: the first mirror never sends bytes
    /// past 8 MiB, so a hedge to it would stall too; its lagging ranges are hedged onto the
    /// next mirror, and the job finishes long before its idle timeout. The last four 2 MiB
    /// ranges stall all four connections at once: the first hedge comes over one more
    /// connection (`per_host: 7` leaves room).
    @Test func aSourcesFirstJobHedgesItsStalledRangesOntoTheNextMirror() async throws {
        var stalled = OriginFile(content: Self.content)
        stalled.pauseFrom = 8 << 20
        stalled.paused = true
        let (world, other) = try await world(OriginFile(content: Self.content), first: stalled)
        let yaml = job(["{origin}/f.bin", other.url("/f.bin")], segments: 4).replacingOccurrences(of: "timeout: 60s", with: "timeout: 90s")
        let report = try await world.run(yaml, options: Self.options(hedging: true))
        let digest = try world.sha256(ofFile: "f.bin")
        let servedSecond = other.bytesServed("/f.bin")
        world.origin.update("/f.bin") { $0.paused = false }
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect((job.hedged ?? 0) >= 1 && servedSecond >= Self.size - (8 << 20), "\(String(describing: job.attemptLog))")
        #expect(job.mirrorsUsed == [0, 1])
        #expect(job.attemptLog?.contains { $0.code == .timeout } != true, "\(String(describing: job.attemptLog))")
    }

    /// The second mirror never sends bytes past 10 MiB: its ranges there are hedged (on nio also
    /// stolen) onto the first, and the job finishes long before its 90 s idle timeout.
    @Test func aMirrorStalledInItsLastRangeIsHedgedOntoTheOther() async throws {
        var stalled = OriginFile(content: Self.content)
        stalled.pauseFrom = 10 << 20
        stalled.paused = true
        let (world, other) = try await world(stalled)
        let report = try await world.run(manifest(other, timeout: "90s"), options: Self.options(hedging: true))
        let digest = try world.sha256(ofFile: "f.bin")
        // The origin sends a held response's rest before it shuts down: one whose client was
        // cancelled but whose socket FoundationNetworking left open would hold it forever.
        other.update("/f.bin") { $0.paused = false }
        try? await other.shutdown()
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded, "\(String(describing: job.error))")
        #expect(digest == Harness.sha256(Self.content))
        #expect((job.hedged ?? 0) >= 1, "\(String(describing: job.attemptLog)) \(String(describing: job.durationSeconds))")
        // The stalled request's idle timeout never fired: the hedge finished the range first.
        #expect(job.attemptLog?.contains { $0.code == .timeout } != true, "\(String(describing: job.attemptLog))")
    }
}
