@testable import BatchFetchEngine
import Foundation
import Testing
import TestOrigin

/// Per-request latency, as on a real network: the origin delays every response head (the
/// latency benchmark's mode), and jobs keep their requests in flight side by side instead of
/// paying the round trip one after another.
@Suite struct LatencyTests {
    @Test func headsWaitTheirDelayButNotForEachOther() async throws {
        let world = try await Harness()
        for index in 0..<16 { world.origin.serve("/f\(index).bin", .generated(size: 4096, seed: UInt64(index))) }
        world.origin.delayHeads(by: .milliseconds(500))
        let jobs = (0..<16).map { "  - {id: f\($0), url: '{origin}/f\($0).bin', size: 4096}" }.joined(separator: "\n")
        let started = ContinuousClock.now
        let report = try await world.run("version: 1\nconcurrency: 16\nper_host: 16\njobs:\n\(jobs)\n")
        let elapsed = ContinuousClock.now - started
        let requests = world.origin.allRequests.count
        let overlapping = world.origin.maxHeadsWaiting
        await world.close()
        #expect(report.status == .succeeded && report.summary.downloaded == 16)
        #expect(requests == 16)
        // Every head waited its delay (a lower bound load cannot break), and requests waited
        // side by side, not one round trip after another.
        #expect(elapsed >= .milliseconds(500), "\(elapsed)")
        #expect(overlapping >= 2, "at most \(overlapping) request waited for its head at a time")
    }
}
