@testable import BatchFetchEngine
import Foundation
import Testing
import TestOrigin

/// `checksums_from`: a job's digest comes from a sum file another job downloads first.
@Suite struct ChecksumsFromTests {
    private func run(sums: String, served: OriginContent = .generated(size: 100_000, seed: 51)) async throws
        -> (RunReport, Harness) {
        let world = try await Harness()
        world.origin.serve("/SHA256SUMS", .text(sums))
        world.origin.serve("/files/data.bin", OriginFile(content: served))
        let report = try await world.run("""
            version: 1
            defaults: {retries: 0}
            jobs:
              - {id: sums, url: "{origin}/SHA256SUMS"}
              - {id: data, url: "{origin}/files/data.bin", checksums_from: sums}
            """)
        return (report, world)
    }

    @Test func theDigestInTheSumFileIsVerified() async throws {
        let content = OriginContent.generated(size: 100_000, seed: 51)
        let (report, world) = try await run(sums: "\(Harness.sha256(content))  data.bin\n\(String(repeating: "0", count: 64))  other.bin\n")
        await world.close()
        #expect(report.jobs[1].status == .downloaded)
        #expect(report.jobs[1].checksumVerified == true)
    }

    @Test func aWrongDigestFailsWithChecksumMismatch() async throws {
        let (report, world) = try await run(sums: "SHA256 (data.bin) = \(String(repeating: "0", count: 64))\n")
        let published = world.exists("data.bin")
        await world.close()
        #expect(report.jobs[1].status == .failed && report.jobs[1].error?.code == .checksumMismatch)
        #expect(!published)
    }

    @Test func aMissingEntryFailsBeforeAnyRequest() async throws {
        let (report, world) = try await run(sums: "\(String(repeating: "0", count: 64))  other.bin\n")
        let requests = world.origin.requests("/files/data.bin")
        await world.close()
        #expect(report.jobs[1].status == .failed && report.jobs[1].error?.code == .checksumUnavailable)
        #expect(report.jobs[1].error?.message == "the sum file of 'sums' (1 entries) has no entry for 'data.bin'")
        #expect(requests.isEmpty)
    }
}
