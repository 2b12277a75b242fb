@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// A server with a request quota that says what is left: a run reads it and never needs the
/// 429, in each header form; the same server saying nothing gets 429s, which `Retry-After` then
/// handles. No timing is asserted: the quota counts what the client did.
@Suite struct QuotaPacingTests {
    static let files = 16

    /// Sixteen files, three at a time, from an origin that takes five requests per `window`
    /// seconds.
    private func run(_ style: OriginQuota.Style, window: Int = 2, defaults: String = "{backoff: 100ms}") async throws
        -> (report: RunReport, refused: Int, requests: Int) {
        let world = try await Harness()
        for index in 0..<Self.files { world.origin.serve("/q\(index)", .generated(size: 2000, seed: UInt64(index))) }
        world.origin.limitRequests(OriginQuota(limit: 5, window: window, style: style))
        let jobs = (0..<Self.files).map { "  - {id: q\($0), url: '{origin}/q\($0)', size: 2000}" }.joined(separator: "\n")
        let report = try await world.run("version: 1\nconcurrency: 3\nper_host: 3\ndefaults: \(defaults)\njobs:\n\(jobs)\n")
        let refused = world.origin.refusedByQuota
        let requests = world.origin.allRequests.count
        await world.close()
        return (report, refused, requests)
    }

    @Test(arguments: [OriginQuota.Style.current, .draft07, .xRateLimitEpoch])
    func aPacedRunNeverHearsTooManyRequests(style: OriginQuota.Style) async throws {
        let (report, refused, requests) = try await run(style)
        #expect(report.status == .succeeded && report.summary.downloaded == Self.files)
        #expect(refused == 0)
        #expect(requests == Self.files)
    }

    /// The control: the same quota unannounced, over an hour — longer than any run, however
    /// loaded the machine (a minute was not: a run beside two CPU hogs outlasted it and got a
    /// fresh quota) — must refuse; `Retry-After` is then longer than `retry_after_max`, so the
    /// refused jobs fail instead of waiting the hour out.
    @Test func withoutTheHeadersTheServerHasToRefuse() async throws {
        let (report, refused, requests) = try await run(.silent, window: 3600, defaults: "{retries: 0, retry_after_max: 1s}")
        #expect(refused > 0)
        #expect(report.summary.downloaded == 5 && report.summary.failed == Self.files - 5)
        #expect(requests == Self.files)
    }
}
