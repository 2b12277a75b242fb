@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// `hash_mirrors`: a job pinned by sha256 asks them for its content before its own URLs; a miss
/// or wrong bytes move on to its own URLs; the job's headers never go to a hash mirror, nor
/// through its redirects.
@Suite struct HashMirrorTests {
    /// A second origin serving content by hash, and the manifest naming it (`template` under it).
    static func manifest(_ world: Harness, mirror: TestOrigin, template: String = "/cas/{sha256_2}/{sha256}",
                         sha256: String, headers: String = "") -> String {
        """
        version: 1
        output_dir: out
        hash_mirrors: ["\(mirror.url(""))\(template)"]
        defaults: {retries: 1, backoff: 50ms, timeout: 60s}
        jobs:
          - id: f
            url: {origin}/own.bin
            dest: f.bin
            checksum: sha256:\(sha256)
        \(headers)
        """
    }

    @Test func aJobIsFetchedFromAHashMirrorBeforeItsOwnURL() async throws {
        let world = try await Harness()
        let mirror = try await TestOrigin.start()
        let content = OriginContent.generated(size: 120_000, seed: 3620)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/own.bin", OriginFile(content: content))
        mirror.serve("/cas/\(sha256.prefix(2))/\(sha256)", OriginFile(content: content))
        let report = try await world.run(Self.manifest(world, mirror: mirror, sha256: sha256))
        let own = world.origin.requests("/own.bin").count
        let published = try world.sha256(ofFile: "out/f.bin")
        try await mirror.shutdown()
        await world.close()
        #expect(report.jobs[0].status == .downloaded && report.jobs[0].source == .hashMirror)
        #expect(report.jobs[0].url?.hasSuffix("/cas/\(sha256.prefix(2))/\(sha256)") == true)
        #expect(own == 0)
        #expect(published == sha256)
    }

    enum Miss: String, CaseIterable {
        case notFound, wrongBytes
    }

    @Test(arguments: Miss.allCases)
    func aMissOrWrongBytesMoveOnToTheJobsOwnURL(_ miss: Miss) async throws {
        let world = try await Harness()
        let mirror = try await TestOrigin.start()
        let content = OriginContent.generated(size: 80_000, seed: 3621)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/own.bin", OriginFile(content: content))
        if miss == .wrongBytes {
            mirror.serve("/cas/\(sha256.prefix(2))/\(sha256)", OriginFile(content: .generated(size: 80_000, seed: 3622)))
        }
        let report = try await world.run(Self.manifest(world, mirror: mirror, sha256: sha256))
        let asked = mirror.requests("/cas/\(sha256.prefix(2))/\(sha256)").count
        let published = try world.sha256(ofFile: "out/f.bin")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.path("out")).filter { $0.contains(".part") }
        try await mirror.shutdown()
        await world.close()
        #expect(asked >= 1)
        #expect(report.jobs[0].status == .downloaded && report.jobs[0].source == .network)
        #expect(published == sha256)
        #expect(leftovers.isEmpty)
    }

    /// A job with a partial of its own (an earlier run broke off) resumes it from its own URL:
    /// a hash mirror's request would have replaced those bytes.
    @Test func aJobWithItsOwnPartialResumesItInsteadOfAskingAHashMirror() async throws {
        let world = try await Harness()
        let mirror = try await TestOrigin.start()
        // Larger than TransferPolicy.resumableSize: a smaller partial is not kept for a rerun.
        let content = OriginContent.generated(size: TransferPolicy.resumableSize + 2_000_000, seed: 3624)
        let sha256 = Harness.sha256(content)
        var own = OriginFile(content: content)
        own.faults = [.drop(afterBytes: TransferPolicy.resumableSize / 2)]
        world.origin.serve("/own.bin", own)
        mirror.serve("/cas/\(sha256.prefix(2))/\(sha256)", OriginFile(content: content))
        let noMirrors = Self.manifest(world, mirror: mirror, sha256: sha256).replacingOccurrences(of: "hash_mirrors:", with: "# hash_mirrors:")
            .replacingOccurrences(of: "retries: 1", with: "retries: 0")
        let broken = try await world.run(noMirrors)
        let report = try await world.run(Self.manifest(world, mirror: mirror, sha256: sha256))
        let asked = mirror.requests("/cas/\(sha256.prefix(2))/\(sha256)").count
        let published = try world.sha256(ofFile: "out/f.bin")
        try await mirror.shutdown()
        await world.close()
        #expect(broken.jobs[0].status == .failed)
        #expect(asked == 0)
        #expect(report.jobs[0].source == .network && (report.jobs[0].resumedFrom ?? 0) > 0, "\(report.jobs[0])")
        #expect(published == sha256)
    }

    /// The job's `Authorization` goes to its own URL only: not to the hash mirror, nor to where
    /// the hash mirror redirects (another origin).
    @Test func theJobsHeadersNeverGoToAHashMirrorOrItsRedirects() async throws {
        let world = try await Harness()
        let mirror = try await TestOrigin.start()
        let elsewhere = try await TestOrigin.start()
        let content = OriginContent.generated(size: 40_000, seed: 3623)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/own.bin", OriginFile(content: content))
        var redirect = OriginFile.text("")
        redirect.redirectTo = elsewhere.url("/blob")
        mirror.serve("/cas/\(sha256.prefix(2))/\(sha256)", redirect)
        elsewhere.serve("/blob", OriginFile(content: content))
        let report = try await world.run(Self.manifest(world, mirror: mirror, sha256: sha256,
                                                       headers: "    headers: {Authorization: Bearer secret-token}"))
        let atMirror = mirror.requests("/cas/\(sha256.prefix(2))/\(sha256)").first
        let atRedirect = elsewhere.requests("/blob").first
        try await mirror.shutdown()
        try await elsewhere.shutdown()
        await world.close()
        #expect(report.jobs[0].source == .hashMirror)
        #expect(atMirror != nil && atMirror?.header("authorization") == nil)
        #expect(atRedirect != nil && atRedirect?.header("authorization") == nil)
    }

    @Test func templatesAreValidatedWhereTheyAreWritten() throws {
        let base = "version: 1\njobs:\n  - {id: a, url: 'https://example.org/a'}\n"
        func problems(_ yaml: String) -> [String] {
            do {
                _ = try ManifestLoader().load(bytes: Array(yaml.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
                return []
            } catch {
                return "\(error)".split(separator: "\n").map(String.init)
            }
        }
        let missing = problems("hash_mirrors: ['https://cas.example.org/sha256/']\n" + base)
        let unknown = problems("hash_mirrors: ['https://cas.example.org/{sha256}/{md5}']\n" + base)
        let scheme = problems("hash_mirrors: ['ftp://cas.example.org/{sha256}']\n" + base)
        let both = problems("hash_mirrors: ['https://a.example/{sha256}']\ndefaults: {hash_mirrors: ['https://b.example/{sha256}']}\n" + base)
        let fine = problems("defaults: {hash_mirrors: ['https://b.example/{sha256_2}/{sha256}']}\n" + base)
        #expect(missing.contains { $0.contains("has no '{sha256}'") }, "\(missing)")
        #expect(unknown.contains { $0.contains("unknown placeholder '{md5}'") }, "\(unknown)")
        #expect(scheme.contains { $0.contains("unsupported URL scheme 'ftp'") }, "\(scheme)")
        #expect(both.contains { $0.contains("not both") }, "\(both)")
        #expect(fine.isEmpty, "\(fine)")
    }
}
