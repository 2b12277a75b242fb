@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// `requests_per_second` on a real run: every job is fetched, and five requests at two per
/// second take at least two seconds (a lower bound, which no load can break; the window's
/// exact rule is `StartPaceTests`).
@Suite struct PacingTests {
    @Test func requestsToAHostArePacedAcrossJobs() async throws {
        let world = try await Harness()
        for index in 0..<5 { world.origin.serve("/p\(index)", .generated(size: 1000, seed: UInt64(index))) }
        let jobs = (0..<5).map { "  - {id: p\($0), url: '{origin}/p\($0)', size: 1000}" }.joined(separator: "\n")
        let started = ContinuousClock.now
        let report = try await world.run("version: 1\nconcurrency: 5\nper_host: 5\ndefaults: {requests_per_second: 2}\njobs:\n\(jobs)\n")
        let elapsed = ContinuousClock.now - started
        let requests = world.origin.allRequests.count
        await world.close()
        #expect(report.status == .succeeded && report.summary.downloaded == 5)
        #expect(requests == 5)
        #expect(elapsed >= .seconds(2), "\(elapsed)")
    }

    /// `--bwlimit` (here a timetable whose one entry holds all day, every day) paces a real run:
    /// 512 KiB at 256 KiB/s, in ranges of a quarter second's worth, cannot take less than 1.75 s
    /// (a lower bound, which no load can break; the timetable's rule is
    /// `BandwidthTimetableTests`, its crossing `RateLimiterTimetableTests`).
    @Test func theBandwidthTimetablePacesARealRun() async throws {
        let world = try await Harness()
        world.origin.serve("/big", .generated(size: 512 << 10, seed: 9))
        var options = RunOptions()
        options.bandwidth = try BandwidthTimetable(parsing: "00:00,256Ki")
        let started = ContinuousClock.now
        let report = try await world.run("version: 1\njobs:\n  - {id: b, url: '{origin}/big', size: 524288}\n", options: options)
        let elapsed = ContinuousClock.now - started
        await world.close()
        #expect(report.status == .succeeded)
        #expect(elapsed >= .milliseconds(1750), "\(elapsed)")
    }
}
