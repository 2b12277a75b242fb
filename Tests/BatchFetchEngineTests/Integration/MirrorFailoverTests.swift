@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// `urls` are tried in order: a mirror that fails after its retries, or serves bad content, hands
/// over to the next, and the report names the mirror that served the file.
@Suite struct MirrorFailoverTests {
    private func manifest(_ world: Harness, paths: [String], extra: String = "") -> String {
        """
        version: 1
        defaults: {retries: 1, backoff: 10ms, backoff_max: 20ms}
        jobs:
          - id: file
            dest: out.bin
            urls: [\(paths.map { "\"{origin}\($0)\"" }.joined(separator: ", "))]
        \(extra.isEmpty ? "" : "    " + extra)
        """
    }

    @Test(arguments: [404, 500])
    func failingMirrorHandsOverToTheNext(status: Int) async throws {
        let world = try await Harness()
        var broken = OriginFile.text("")
        broken.fixedStatus = status
        world.origin.serve("/a/f", broken)
        world.origin.serve("/b/f", .text("from b"))
        let report = try await world.run(manifest(world, paths: ["/a/f", "/b/f"]))
        let text = try String(contentsOfFile: world.path("out.bin"), encoding: .utf8)
        let triesOnA = world.origin.requests("/a/f").count
        await world.close()
        let job = report.jobs[0]
        #expect(job.status == .downloaded && job.mirrorIndex == 1)
        #expect(job.url == world.origin.url("/b/f"))
        #expect(text == "from b")
        #expect(triesOnA == (status == 404 ? 1 : 2))
        // The report keeps every attempt of a job that succeeded after failures.
        #expect(job.attemptLog?.map(\.mirrorIndex) == (status == 404 ? [0, 1] : [0, 0, 1]))
        #expect(job.attemptLog?.first?.httpStatus == status && job.attemptLog?.last?.code == nil)
    }

    @Test func checksumMismatchOnOneMirrorIsFixedByTheNext() async throws {
        let world = try await Harness()
        world.origin.serve("/a/f", .text("tampered"))
        world.origin.serve("/b/f", .text("foo"))
        let pin = "checksum: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        let report = try await world.run(manifest(world, paths: ["/a/f", "/b/f"], extra: pin))
        let text = try String(contentsOfFile: world.path("out.bin"), encoding: .utf8)
        await world.close()
        let job = report.jobs[0]
        #expect(job.status == .downloaded && job.mirrorIndex == 1 && job.checksumVerified == true)
        #expect(text == "foo")
    }

    @Test func everyMirrorFailingReportsEachAttempt() async throws {
        let world = try await Harness()
        var broken = OriginFile.text("")
        broken.fixedStatus = 403
        world.origin.serve("/a/f", broken)
        world.origin.serve("/b/f", broken)
        let report = try await world.run(manifest(world, paths: ["/a/f", "/b/f"]))
        await world.close()
        let job = report.jobs[0]
        #expect(job.status == .failed && job.error?.code == .httpStatus)
        #expect(job.error?.attempts?.map(\.mirrorIndex) == [0, 1])
        #expect(job.error?.attempts?.map(\.httpStatus) == [403, 403])
    }

    @Test func partialFromOneMirrorContinuesOnAnotherWithTheSameStrongETag() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 6 << 20, seed: 31)
        var dropping = OriginFile(content: content)
        dropping.faults = [.drop(afterBytes: 2 << 20)]
        world.origin.serve("/a/f", dropping)
        world.origin.serve("/b/f", OriginFile(content: content))  // same content, same ETag
        let report = try await world.run(manifest(world, paths: ["/a/f", "/b/f"]).replacingOccurrences(of: "retries: 1", with: "retries: 0"))
        let onB = world.origin.requests("/b/f").first
        let servedB = world.origin.bytesServed("/b/f")
        let digest = try world.sha256(ofFile: "out.bin")
        await world.close()
        let job = report.jobs[0]
        #expect(job.status == .downloaded && job.mirrorIndex == 1)
        let resumedFrom = try #require(job.resumedFrom)
        #expect(onB?.header("Range")?.hasPrefix("bytes=\(resumedFrom)-") == true)
        #expect(servedB == (6 << 20) - resumedFrom)
        #expect(digest == Harness.sha256(content))
    }
}
