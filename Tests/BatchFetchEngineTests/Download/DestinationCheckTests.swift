@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
@testable import BatchFetchState
import Foundation
import Testing

/// The local check shared by run, dry-run and verify: what is at `dest`, against which
/// expectations, with or without the state cache.
@Suite struct DestinationCheckTests {
    static let content = Data("dataset bytes".utf8)
    static let sha256 = Digester.sha256Hex("dataset bytes")

    static func job(_ extra: String = "") throws -> Job {
        let text = "version: 1\njobs:\n  - {id: a, url: \"http://127.0.0.1/a\", dest: d/a.bin\(extra)}\n"
        return try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp").jobs[0]
    }

    static func directory(with content: Data?) throws -> (URL, SafeDirectory) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-dest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url.appendingPathComponent("d"), withIntermediateDirectories: true)
        if let content { try content.write(to: url.appendingPathComponent("d/a.bin")) }
        return (url, try SafeDirectory.root(url.path, create: false))
    }

    @Test func aMatchingFileIsUpToDateAndItsDigestsAreCachedForTheNextRun() throws {
        let (url, root) = try Self.directory(with: Self.content)
        defer { try? FileManager.default.removeItem(at: url) }
        let job = try Self.job(", checksum: \"sha256:\(Self.sha256)\", size: \(Self.content.count)")
        let state = StateCache(directory: root)
        guard case .upToDate(let result) = DestinationCheck(job: job, root: root, state: state).verdict() else {
            Issue.record("a matching file should be up to date")
            return
        }
        #expect(result.checksums["sha256"] == Self.sha256 && result.checksumVerified == true)
        #expect(state.entry(for: "d/a.bin", status: root.status("d/a.bin"))?.digests["sha256"] == Self.sha256)
    }

    @Test func aSizeThatDiffersIsFoundWithoutHashing() throws {
        let (url, root) = try Self.directory(with: Self.content)
        defer { try? FileManager.default.removeItem(at: url) }
        let job = try Self.job(", size: 3")
        let check = DestinationCheck(job: job, root: root, state: nil)
        guard case .differs(let size, nil, let failure) = check.inspect(against: [ContentExpectation(job: job)]) else {
            Issue.record("the size should differ")
            return
        }
        #expect(size == Int64(Self.content.count) && failure.code == .sizeMismatch)
        guard case .fetch = check.verdict() else {
            Issue.record("a file of the wrong size is fetched again")
            return
        }
    }

    @Test func aSymlinkOrNothingAtDestIsMissing() throws {
        let (url, root) = try Self.directory(with: nil)
        defer { try? FileManager.default.removeItem(at: url) }
        let job = try Self.job()
        #expect(DestinationCheck(job: job, root: root, state: nil).inspect(against: []) == .missing)
        try Self.content.write(to: url.appendingPathComponent("elsewhere.bin"))
        try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent("d/a.bin").path,
                                                   withDestinationPath: url.appendingPathComponent("elsewhere.bin").path)
        #expect(DestinationCheck(job: job, root: root, state: nil).inspect(against: []) == .missing)
    }

    @Test func refreshAlwaysFetchesAndIfChangedAsksTheServerOnlyWithValidators() throws {
        let (url, root) = try Self.directory(with: Self.content)
        defer { try? FileManager.default.removeItem(at: url) }
        guard case .fetch = DestinationCheck(job: try Self.job(", refresh: always"), root: root, state: nil).verdict() else {
            Issue.record("refresh: always fetches")
            return
        }
        let job = try Self.job(", refresh: if-changed")
        let state = StateCache(directory: root)
        // No validators recorded: nothing to ask with, so the file is fetched.
        guard case .fetch = DestinationCheck(job: job, root: root, state: state).verdict() else {
            Issue.record("if-changed without validators fetches")
            return
        }
        state.record("d/a.bin", status: root.status("d/a.bin"), digests: ["sha256": Self.sha256],
                     urlSHA256: MirrorURL.identity(of: "http://127.0.0.1/a"), etag: "\"v1\"", lastModified: nil)
        guard case .revalidate(_, let etag, nil) = DestinationCheck(job: job, root: root, state: state).verdict() else {
            Issue.record("if-changed with an ETag asks the server")
            return
        }
        #expect(etag == "\"v1\"")
    }
}
