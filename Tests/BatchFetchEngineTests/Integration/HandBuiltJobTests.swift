@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Jobs a library caller builds by hand, past validation.
@Suite struct HandBuiltJobTests {
    /// A mirror URL that does not parse fails its job before any request (the mirrors after it
    /// are not renumbered); the other jobs run.
    @Test func aURLThatDoesNotParseFailsItsJob() async throws {
        let world = try await Harness()
        world.origin.serve("/a.bin", .generated(size: 4096, seed: 1))
        var manifest = try world.manifest("""
            version: 1
            jobs:
              - {id: a, url: "{origin}/a.bin", dest: a.bin}
              - {id: b, url: "{origin}/a.bin", dest: b.bin}
            """)
        manifest.jobs[1].urls = [TemplatedString(literal: "http://[::1"), manifest.jobs[1].urls[0]]
        let report = await Runner(manifest: manifest, options: world.options(for: manifest)).start().report
        let requests = world.origin.requests("/a.bin").count
        await world.close()

        let b = report.jobs.first { $0.id == "b" }
        #expect(report.jobs.first { $0.id == "a" }?.status == .downloaded)
        #expect(b?.status == .failed && b?.error?.code == .connection && b?.error?.message == "invalid URL http://[::1")
        #expect(requests == 1)
    }
}
