@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// Per-request latency, as on a real network: the origin delays every response head (the
/// latency benchmark's mode), and jobs keep their requests in flight side by side instead of
/// paying the round trip one after another.
@Suite struct LatencyTests {
    @Test func headsWaitTheirDelayButNotForEachOther() async throws {
        let world = try await Harness()
        let paths = (0..<16).map { "/f\($0).bin" }
        for (index, path) in paths.enumerated() {
            var file = OriginFile.generated(size: 4096, seed: UInt64(index))
            // Held at the origin until released: two requests waiting at once prove the jobs
            // do not wait for each other's answers, however slowly this machine runs them.
            file.held = true
            world.origin.serve(path, file)
        }
        world.origin.delayHeads(by: .milliseconds(500))
        let jobs = (0..<16).map { "  - {id: f\($0), url: '{origin}/f\($0).bin', size: 4096}" }.joined(separator: "\n")
        let started = ContinuousClock.now
        // A held request waits on the test, not the network: no idle timeout may end it (under
        // two CPU hogs the second arrival once came after the default 30 s, and every file was
        // asked twice).
        let run = try world.start("version: 1\nconcurrency: 16\nper_host: 16\ndefaults: {timeout: 10m}\njobs:\n\(jobs)\n")
        let arrived = { paths.reduce(0) { $0 + world.origin.arrivals($1) } }
        let side = await eventually { arrived() >= 2 }
        let together = arrived()
        for path in paths { world.origin.update(path) { $0.held = false } }
        let report = await run.report
        let elapsed = ContinuousClock.now - started
        let requests = world.origin.allRequests.count
        await world.close()
        #expect(report.status == .succeeded && report.summary.downloaded == 16)
        #expect(requests == 16)
        #expect(side, "at most \(together) request reached the origin while the first waited")
        // Every head waited its delay (a lower bound load cannot break).
        #expect(elapsed >= .milliseconds(500), "\(elapsed)")
    }
}
