@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Small files of known size, and bodies of unknown size until they turn out large, are written
/// to a part without a name and linked into place (``PartialFiles/openPart(unnamed:)``), on
/// both transports.
@Suite struct UnnamedPartTests {
    /// An earlier run's `<dest>.part` is used up, not left behind; a file that differs at `dest`
    /// is replaced; no temporary name is left.
    @Test func aLeftoverPartIsUsedUpAndAnOldFileReplaced() async throws {
        let world = try await Harness()
        world.origin.serve("/a.bin", .generated(size: 4096, seed: 1))
        world.origin.serve("/b.bin", .generated(size: 4096, seed: 2))
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: world.path("a.bin.part")))
        try Data(repeating: 8, count: 100).write(to: URL(fileURLWithPath: world.path("b.bin")))
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: a, url: "{origin}/a.bin", dest: a.bin, size: 4096}
              - {id: b, url: "{origin}/b.bin", dest: b.bin, size: 4096}
            """)
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        let a = try? world.sha256(ofFile: "a.bin"), b = try? world.sha256(ofFile: "b.bin")
        await world.close()

        #expect(report.jobs.allSatisfy { $0.status == .downloaded }, "\(report.jobs.map { String(describing: $0.error) })")
        #expect(a == Harness.sha256(.generated(size: 4096, seed: 1)))
        #expect(b == Harness.sha256(.generated(size: 4096, seed: 2)))
        #expect(names.filter { $0.contains("a.bin") || $0.contains("b.bin") }.sorted() == ["a.bin", "b.bin"])
    }

    /// Two jobs with the same dest directory and size, one failing verification: the failed one
    /// leaves nothing, the other is published; the run's directory holds only the dest.
    @Test func aFailedSmallFileLeavesNothing() async throws {
        let world = try await Harness()
        world.origin.serve("/good.bin", .generated(size: 4096, seed: 3))
        world.origin.serve("/bad.bin", .generated(size: 4096, seed: 4))
        let report = try await world.run("""
            version: 1
            defaults: {retries: 0}
            jobs:
              - {id: good, url: "{origin}/good.bin", dest: good.bin, size: 4096}
              - {id: bad, url: "{origin}/bad.bin", dest: bad.bin, size: 4096, checksum: "sha256:\(String(repeating: "0", count: 64))"}
            """)
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        await world.close()

        let bad = report.jobs.first { $0.id == "bad" }
        #expect(bad?.status == .failed && bad?.error?.code == .checksumMismatch)
        #expect(names.filter { $0.contains(".bin") } == ["good.bin"])
    }

    /// A body of unknown size starts in an unnamed part: a small one that breaks off leaves
    /// nothing behind (a named part would have stayed: bytes without a sidecar, which no later
    /// run trusts).
    @Test func aSmallBodyOfUnknownSizeThatBreaksOffLeavesNothing() async throws {
        let world = try await Harness()
        var file = OriginFile.generated(size: 64 << 10, seed: 5)
        file.faults = [.drop(afterBytes: 10 << 10)]
        world.origin.serve("/s.bin", file)
        let report = try await world.run(world.single("/s.bin", dest: "s.bin", extra: "retries: 0"))
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        await world.close()

        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.code == .connection, "\(String(describing: report.jobs[0].error))")
        #expect(!names.contains { $0.contains("s.bin") }, "\(names)")
    }

    /// A body of unknown size that turns out large is given the name `<dest>.part` and a
    /// sidecar, so that a later run resumes it (`partialResumesAcrossRunsWithTheStrongETag`
    /// and others). When another process took that name after the job began, it is not
    /// replaced: the part stays unnamed (not resumable, no sidecar), the job completes, and the
    /// other file is left as it was.
    @Test func aPartNameTakenMidRunIsLeftToItsOwner() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 6 << 20, seed: 6)
        var file = OriginFile(content: content)
        file.held = true
        world.origin.serve("/l.bin", file)
        let run = try world.start(world.single("/l.bin", dest: "l.bin"))
        // The request is at the origin: the job's part is open, without a name.
        let waiting = await eventually { world.origin.arrivals("/l.bin") > 0 }
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: world.path("l.bin.part")))
        world.origin.update("/l.bin") { $0.held = false }
        let report = await run.report
        let digest = try? world.sha256(ofFile: "l.bin")
        let other = try? Data(contentsOf: URL(fileURLWithPath: world.path("l.bin.part")))
        let sidecar = world.exists(DestPath.sidecarName(for: "l.bin"))
        await world.close()

        #expect(waiting)
        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(digest == Harness.sha256(content))
        #expect(other == Data("theirs".utf8))
        #expect(!sidecar)
    }
}
