@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Segmented downloads against the loopback origin: parallel ranges into one file, retries of a
/// single range, and the fall back to one stream when ranges stop being honoured.
@Suite struct SegmentedDownloadTests {
    static let size: Int64 = 24 << 20

    /// A 24 MiB file fetched with 4 segments (ranges of 2 MiB, the memory cap's share), trickled so
    /// they overlap.
    private func run(_ world: Harness, change: (inout OriginFile) -> Void = { _ in }) async throws -> RunReport {
        var file = OriginFile.generated(size: Self.size, seed: 5)
        file.trickleBytesPerSecond = 24 << 20
        change(&file)
        world.origin.serve("/big.bin", file)
        var options = RunOptions()
        options.segmentRangeSize = 2 << 20  // the same requests whichever the transport
        return try await world.run(world.single("/big.bin", extra: "segments: 4\nsize: \(Self.size)"), options: options)
    }

    @Test func segmentsFetchRangesInParallelIntoOneFile() async throws {
        let world = try await Harness()
        // Bytes from 6 MiB on wait until two ranges are in flight at once: the overlap is forced,
        // whatever the machine's load.
        var file = OriginFile.generated(size: Self.size, seed: 5)
        file.pauseFrom = 6 << 20
        file.paused = true
        world.origin.serve("/big.bin", file)
        var options = RunOptions()
        options.segmentRangeSize = 2 << 20
        let handle = try world.start(world.single("/big.bin", extra: "segments: 4\nsize: \(Self.size)"), options: options)
        let overlapped = await eventually { world.origin.responsesInFlight >= 2 }
        world.origin.update("/big.bin") { $0.paused = false }
        let report = await handle.report
        let digest = try world.sha256(ofFile: "out.bin")
        let requests = world.origin.requests("/big.bin")
        let served = world.origin.bytesServed("/big.bin")
        let inFlight = world.origin.maxResponsesInFlight
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded && job.segments == 4)
        #expect(digest == Harness.sha256(.generated(size: Self.size, seed: 5)))
        #expect(job.checksums?["sha256"] == digest)
        // The 256 KiB probe, the rest of the first 2 MiB, and 2 MiB ranges on their grid, every
        // one a range request with If-Range after the probe.
        #expect(requests.count == 1 + Int(Self.size >> 21))
        #expect(requests.allSatisfy { $0.header("range") != nil })
        #expect(requests.dropFirst().allSatisfy { $0.header("if-range") != nil })
        #expect(overlapped && inFlight >= 2)
        #expect(served == Self.size)
        #expect(job.bytesTransferred == Self.size)
        #expect(leftovers.sorted() == [".batchfetch-state.sqlite", "out.bin"])
    }

    @Test func aDroppedRangeIsRetriedFromWhereItStoppedAndA503RangeIsRetried() async throws {
        let world = try await Harness()
        let report = try await run(world) {
            $0.faults = [.pass, .drop(afterBytes: 1 << 20), .status(503, retryAfter: "1")]
        }
        let digest = try world.sha256(ofFile: "out.bin")
        let served = world.origin.bytesServed("/big.bin")
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded && job.segments == 4)
        #expect(digest == Harness.sha256(.generated(size: Self.size, seed: 5)))
        // Nothing fetched twice: the dropped range continued at its last written byte.
        #expect(served == Self.size)
        #expect(job.attempts == 3)
        // How long the 503's range waits is the planner's decision (SegmentPlannerTests).
    }

    @Test func aServerThatStopsHonouringRangesFallsBackToOneStream() async throws {
        let world = try await Harness()
        let report = try await run(world) { $0.rangesHonoured = 3 }
        let digest = try world.sha256(ofFile: "out.bin")
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .downloaded)
        #expect(digest == Harness.sha256(.generated(size: Self.size, seed: 5)))
        // The stream that finished it got the whole file with a 200.
        #expect(job.httpStatus == 200)
        #expect(job.attempts ?? 0 >= 2)
    }

    @Test func autoSegmentsOnlyFilesOfAKnownLargeSize() async throws {
        let world = try await Harness()
        world.origin.serve("/small.bin", .generated(size: 1 << 20, seed: 6))
        let report = try await world.run(world.single("/small.bin", extra: "size: \(1 << 20)"))
        let requests = world.origin.requests("/small.bin")
        await world.close()
        #expect(report.jobs[0].status == .downloaded && report.jobs[0].segments == nil)
        #expect(requests.count == 1 && requests[0].header("range") == nil)
        #expect(TransferPolicy.segmentCount(try Self.job(size: 64 << 20), rateLimited: false) == 4)
        #expect(TransferPolicy.segmentCount(try Self.job(size: 64 << 20), rateLimited: true) == 1)
        #expect(TransferPolicy.segmentCount(try Self.job(size: nil), rateLimited: false) == 4)
        #expect(TransferPolicy.segmentCount(try Self.job(size: 64 << 20), rateLimited: false, perHost: 2) == 2)
    }

    /// Without a size in the manifest, `auto` decides by the size the first answer tells: a
    /// file of at least 64 MiB goes on in segments and a smaller one does not, on both
    /// transports. The first request is the bounded range URLSession always asks for first, or
    /// on nio a first piece; a small file comes whole in it.
    @Test func autoSegmentsByTheSizeTheFirstResponseTells() async throws {
        let world = try await Harness()
        world.origin.serve("/small.bin", .generated(size: 3 << 20, seed: 7))
        world.origin.serve("/large.bin", .generated(size: 80 << 20, seed: 8))
        let small = try await world.run(world.single("/small.bin", dest: "small.bin"))
        let smallRequests = world.origin.requests("/small.bin")
        let large = try await world.run(world.single("/large.bin", dest: "large.bin"))
        await world.close()
        #expect(small.jobs[0].status == .downloaded && small.jobs[0].segments == nil)
        #expect(smallRequests.count == 1 && smallRequests[0].header("range") == "bytes=0-\(((world.streams ? 16 : 8) << 20) - 1)")
        #expect(large.jobs[0].status == .downloaded && large.jobs[0].size == 80 << 20)
        #expect(large.jobs[0].segments == 4, "\(large.jobs[0])")
    }

    private static func job(size: Int64?) throws -> BatchFetchSpec.Job {
        let text = "version: 1\njobs:\n  - {id: a, url: \"http://127.0.0.1/a\"\(size.map { ", size: \($0)" } ?? "")}\n"
        return try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp").jobs[0]
    }
}

/// A disk slower than the network: transfers pause (cancel, drain, resume in bounded ranges)
/// instead of buffering; the bytes still come out right, single stream or segmented.
@Suite struct SlowDiskTests {
    @Test(arguments: [1, 4])
    func slowDiskPausesTransfersAndStillGetsTheRightBytes(segments: Int) async throws {
        let world = try await Harness()
        let size: Int64 = 24 << 20
        world.origin.serve("/big.bin", .generated(size: size, seed: 8))
        var options = RunOptions()
        options.memoryCapPerJob = 4 << 20
        options.simulatedDiskRate = 12 << 20
        let report = try await world.run(world.single("/big.bin", extra: "segments: \(segments)\nsize: \(size)"), options: options)
        let digest = try world.sha256(ofFile: "out.bin")
        let bounded = world.origin.requests("/big.bin").filter { ($0.header("range") ?? "").range(of: #"^bytes=\d+-\d+$"#, options: .regularExpression) != nil }
        let served = world.origin.bytesServed("/big.bin")
        await world.close()
        #expect(report.jobs[0].status == .downloaded)
        #expect(digest == Harness.sha256(.generated(size: size, seed: 8)))
        if world.streams {
            // Backpressure: reads waited for the disk, so nothing was dropped or fetched twice.
            #expect(served == size)
        } else {
            // The disk fell behind: the file came in bounded ranges (after a pause, or as segments).
            #expect(bounded.count >= 2)
        }
    }
}
