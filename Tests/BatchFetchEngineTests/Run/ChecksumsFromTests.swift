@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

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

    /// Debian-style sums list `./vmlinuz` before `./cdrom/vmlinuz`, and paths relative to the sum
    /// file: the job's URL below the sum file's URL (or its dest below the sum file's dest)
    /// finds its own line.
    @Test func entriesAreFoundByTheirPathRelativeToTheSumFile() async throws {
        let world = try await Harness()
        let kernel = OriginContent.generated(size: 50_000, seed: 1), cdrom = OriginContent.generated(size: 60_000, seed: 2)
        let netboot = OriginContent.generated(size: 70_000, seed: 3)
        world.origin.serve("/debian/SHA256SUMS", .text("""
            \(Harness.sha256(kernel))  ./vmlinuz
            \(Harness.sha256(cdrom))  ./cdrom/vmlinuz
            \(Harness.sha256(netboot))  ./netboot/netboot.tar.gz
            """))
        world.origin.serve("/debian/cdrom/vmlinuz", OriginFile(content: cdrom))
        world.origin.serve("/elsewhere/netboot.tar.gz", OriginFile(content: netboot))
        let report = try await world.run("""
            version: 1
            defaults: {retries: 0}
            jobs:
              - {id: sums, url: "{origin}/debian/SHA256SUMS", dest: debian/SHA256SUMS}
              - {id: cd, url: "{origin}/debian/cdrom/vmlinuz", dest: cd-kernel, checksums_from: sums}
              - {id: netboot, url: "{origin}/elsewhere/netboot.tar.gz", dest: debian/netboot/netboot.tar.gz, checksums_from: sums}
            """)
        await world.close()
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded, .downloaded])
        #expect(report.jobs.dropFirst().allSatisfy { $0.checksumVerified == true })
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
