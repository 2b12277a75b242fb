@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// `pin`, `check`, `verify` and `run --locked` against the loopback origin.
@Suite struct DriftCheckTests {
    static let size: Int64 = 300_000

    /// Two mirrors of one file, pinned.
    private func pinned(_ configure: (inout OriginFile) -> Void = { _ in }) async throws -> (Harness, Manifest, LockFile) {
        let world = try await Harness()
        for path in ["/a/f.bin", "/b/f.bin"] {
            var file = OriginFile.generated(size: Self.size, seed: 71)
            configure(&file)
            world.origin.serve(path, file)
        }
        let manifest = try load(world, """
            version: 1
            defaults: {retries: 1, backoff: 10ms, backoff_max: 20ms}
            jobs:
              - {id: f, urls: ["{origin}/a/f.bin", "{origin}/b/f.bin"]}
            """)
        let (lock, report) = await Pinner(manifest: manifest, options: Self.options).run()
        #expect(report.status == .succeeded)
        return (world, manifest, try #require(lock))
    }

    static var options: RunOptions {
        var options = RunOptions()
        options.manifestSHA256 = String(repeating: "0", count: 64)
        return options
    }

    private func load(_ world: Harness, _ yaml: String) throws -> Manifest {
        try ManifestLoader(environment: [:]).load(
            bytes: Array(yaml.replacingOccurrences(of: "{origin}", with: world.origin.url("")).utf8),
            displayPath: "m.yaml", baseDirectory: world.directory.path)
    }

    private func check(_ manifest: Manifest, _ lock: LockFile?, deep: Bool = false) async -> [MirrorCheck] {
        await Checker(manifest: manifest, lock: lock, deep: deep, options: Self.options).run().jobs[0].mirrors ?? []
    }

    @Test func pinRecordsEveryMirrorDeterministically() async throws {
        let (world, manifest, lock) = try await pinned()
        let content = OriginContent.generated(size: Self.size, seed: 71)
        let (again, _) = await Pinner(manifest: manifest, options: Self.options).run()
        let served = world.origin.bytesServed("/a/f.bin") + world.origin.bytesServed("/b/f.bin")
        await world.close()
        let entry = try #require(lock.jobs["f"])
        #expect(entry.sha256 == Harness.sha256(content) && entry.size == Self.size)
        #expect(entry.mirrors.map(\.url) == [world.origin.url("/a/f.bin"), world.origin.url("/b/f.bin")])
        #expect(entry.mirrors.allSatisfy { $0.size == Self.size && $0.etag?.hasPrefix("\"") == true && $0.lastModified != nil })
        // The second pin reuses the verified file (no body fetched again) and writes the same bytes.
        #expect(served == Self.size)
        #expect(try StableJSON.encode(again) == StableJSON.encode(lock))
    }

    @Test func sameSizeNewContentBehindOneMirrorIsDrift() async throws {
        let (world, manifest, lock) = try await pinned()
        world.origin.replace("/b/f.bin", with: .generated(size: Self.size, seed: 72))
        let shallow = await check(manifest, lock)
        let deep = await check(manifest, lock, deep: true)
        await world.close()
        #expect(shallow.map(\.status) == [.ok, .drift])
        #expect(shallow[1].differences?.map(\.field) == ["etag", "last_modified"])
        #expect(deep.map(\.status) == [.ok, .drift])
        #expect(deep[1].differences?.map(\.field) == ["sha256"])
        #expect(deep[1].differences?.first?.expected == lock.jobs["f"]?.sha256)
    }

    @Test func aNewETagOverTheSameBytesIsDriftOnlyWithoutDeep() async throws {
        let (world, manifest, lock) = try await pinned()
        world.origin.update("/a/f.bin") { $0.version += 1 }  // new ETag and date, same content
        let shallow = await check(manifest, lock)
        let deep = await check(manifest, lock, deep: true)
        await world.close()
        #expect(shallow[0].status == .drift)
        #expect(deep.map(\.status) == [.ok, .ok])
        #expect(deep[0].sha256 == lock.jobs["f"]?.sha256 && deep[0].method == "GET")
    }

    @Test func aMissingMirrorAndARefusedHead() async throws {
        let (world, manifest, lock) = try await pinned { $0.refusesHead = true }
        world.origin.remove("/b/f.bin")
        let mirrors = await check(manifest, lock)
        let methods = world.origin.requests("/a/f.bin").suffix(2).map(\.method)
        await world.close()
        #expect(mirrors.map(\.status) == [.ok, .missing])
        #expect(mirrors[0].method == "GET" && mirrors[0].size == Self.size)
        #expect(methods == ["HEAD", "GET"])
        #expect(mirrors[1].httpStatus == 404)
    }

    @Test func aReprDigestThatDisagreesWithThePinnedChecksumIsDrift() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 1000, seed: 73)
        var file = OriginFile(content: content)
        let wrong = Data(repeating: 7, count: 32).base64EncodedString()
        file.extraHeaders = [("Repr-Digest", "sha-256=:\(wrong):")]
        world.origin.serve("/f.bin", file)
        var honest = OriginFile(content: content)
        honest.extraHeaders = [("Content-Digest", "sha-256=:\(Data(hex: Harness.sha256(content)).base64EncodedString()):")]
        world.origin.serve("/g.bin", honest)
        let manifest = try load(world, """
            version: 1
            jobs:
              - {id: f, urls: ["{origin}/f.bin", "{origin}/g.bin"], checksum: "sha256:\(Harness.sha256(content))"}
            """)
        let mirrors = await check(manifest, nil)
        await world.close()
        #expect(mirrors.map(\.status) == [.drift, .ok])
        #expect(mirrors[0].differences?.map(\.field) == ["sha256"])
        #expect(mirrors[1].sha256 == Harness.sha256(content))
    }

    /// Without a lock, `check --deep` holds a `checksums_from` job to its mirror's own sum file.
    @Test func deepCheckUsesTheSumFileWhenThereIsNoLock() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 40_000, seed: 5)
        world.origin.serve("/data.bin", OriginFile(content: content))
        world.origin.serve("/SHA256SUMS", .text("\(Harness.sha256(content))  data.bin\n"))
        let yaml = """
            version: 1
            defaults: {retries: 0}
            jobs:
              - {id: sums, url: "{origin}/SHA256SUMS"}
              - {id: data, url: "{origin}/data.bin", checksums_from: sums}
            """
        let agreeing = try await world.check(yaml, deep: true)
        #expect(agreeing.jobs.map(\.status) == [.ok, .ok])
        #expect(agreeing.jobs[1].checksums?["sha256"] == Harness.sha256(content))

        // The file changed on the server, its SHA256SUMS did not: drift, not "ok".
        world.origin.replace("/data.bin", with: .generated(size: 40_000, seed: 6))
        let changed = try await world.check(yaml, deep: true)
        #expect(changed.jobs[1].status == .drift)
        #expect(changed.jobs[1].mirrors?.first?.differences?.contains { $0.field == "sha256" } == true)

        // The sum file no longer lists it.
        world.origin.serve("/SHA256SUMS", .text("\(Harness.sha256(content))  other.bin\n"))
        let unlisted = try await world.check(yaml, deep: true)
        #expect(unlisted.jobs[1].status == .drift)
        #expect(unlisted.jobs[1].error?.code == .checksumUnavailable)
        await world.close()
    }

    /// caddy and twisted.web answer `Range: bytes=0-` on an empty file with 416 `bytes */0`.
    @Test func deepCheckOfAnEmptyFileThatAnswers416() async throws {
        let world = try await Harness()
        world.origin.serve("/empty", .bytes([]))
        let yaml = "version: 1\njobs:\n  - {id: e, url: \"{origin}/empty\", size: 0, retries: 0}\n"
        let report = try await world.check(yaml, deep: true)
        #expect(world.origin.requests("/empty").first.map { $0.header("Range") != nil } == true)
        #expect(report.jobs[0].status == .ok, "\(String(describing: report.jobs[0].mirrors))")
        #expect(report.jobs[0].mirrors?.first?.sha256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        await world.close()
    }

    @Test func unreachableAfterRetries() async throws {
        let world = try await Harness()
        var broken = OriginFile.text("")
        broken.fixedStatus = 503
        world.origin.serve("/f.bin", broken)
        let manifest = try load(world, """
            version: 1
            defaults: {retries: 2, backoff: 10ms, backoff_max: 20ms}
            jobs:
              - {id: f, url: "{origin}/f.bin"}
            """)
        let mirrors = await check(manifest, nil)
        let tries = world.origin.requests("/f.bin").count
        await world.close()
        #expect(mirrors.map(\.status) == [.unreachable] && mirrors[0].message == "HTTP 503")
        #expect(tries == 3)
    }

    @Test func runLockedFailsOnContentThatDiffersFromTheLock() async throws {
        let (world, manifest, lock) = try await pinned()
        try FileManager.default.removeItem(atPath: world.path("f.bin"))
        for path in ["/a/f.bin", "/b/f.bin"] { world.origin.replace(path, with: .generated(size: Self.size, seed: 74)) }
        var options = Self.options
        options.lock = lock
        let report = await Runner(manifest: manifest, options: options).run()
        let published = world.exists("f.bin")
        await world.close()
        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.code == .lockMismatch)
        #expect(!published)
    }

    @Test func verifyFindsMismatchedAndMissingFilesOffline() async throws {
        let (world, _, lock) = try await pinned()
        let manifest = try load(world, """
            version: 1
            jobs:
              - {id: f, urls: ["{origin}/a/f.bin", "{origin}/b/f.bin"]}
              - {id: gone, url: "{origin}/gone.bin", size: 10}
            """)
        world.origin.resetCounters()
        var lock2 = lock
        lock2.jobs["gone"] = LockFile.Entry(dest: "gone.bin", size: 10, sha256: String(repeating: "0", count: 64), mirrors: [])
        #expect(await Verifier(manifest: manifest, lock: lock2, options: Self.options).run().jobs.map(\.status) == [.ok, .missing])
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: world.path("f.bin")))
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()
        let report = await Verifier(manifest: manifest, lock: lock2, options: Self.options).run()
        let requests = world.origin.allRequests.count
        await world.close()
        #expect(report.jobs.map(\.status) == [.drift, .missing])
        #expect(report.jobs[0].error?.code == .lockMismatch)
        #expect(report.summary.drift == 1 && report.summary.missing == 1 && report.status == .failed)
        #expect(requests == 0)  // offline
    }

    @Test func theLockMustListTheManifestsJobs() throws {
        let lock = LockFile(manifest: "m.yaml", jobs: [
            "old": LockFile.Entry(dest: "old", size: 1, sha256: String(repeating: "0", count: 64), mirrors: []),
        ])
        let manifest = try ManifestLoader(environment: [:]).load(
            bytes: Array("version: 1\njobs:\n  - {id: new, url: \"http://127.0.0.1/new\"}\n".utf8),
            displayPath: "m.yaml", baseDirectory: "/tmp")
        #expect(lock.mismatch(with: manifest) == [
            "job 'new' is not in the lock", "the lock has job 'old', which the manifest no longer has",
        ])
        #expect(LockFile.defaultPath(forManifest: "/data/datasets.yaml") == "/data/datasets.lock.json")
    }

    @Test func digestHeadersAreReadAsHex() {
        let hex = String(repeating: "ab", count: 32)
        let base64 = Data(hex: hex).base64EncodedString()
        #expect(MirrorProbe.sha256("sha-512=:AAAA:, sha-256=:\(base64):") == hex)
        #expect(MirrorProbe.sha256("sha-256=:bm90MzI=:") == nil)
        #expect(MirrorProbe.sha256(nil) == nil)
    }

    @Test func verdictRules() {
        let expected = MirrorExpectation(size: 10, sha256: "aa", etag: "\"1\"", lastModified: "d1")
        let same = MirrorObservation(outcome: .answered, httpStatus: 200, method: "HEAD", size: 10, etag: "\"1\"", lastModified: "d1")
        #expect(MirrorVerdict.judge(same, expected: expected).status == .ok)
        var moved = same
        moved.etag = "\"2\""
        #expect(MirrorVerdict.judge(moved, expected: expected).differences == [.init(field: "etag", expected: "\"1\"", actual: "\"2\"")])
        moved.sha256 = "aa"
        moved.hashed = true
        #expect(MirrorVerdict.judge(moved, expected: expected).status == .ok)
        var resized = same
        resized.size = 11
        #expect(MirrorVerdict.judge(resized, expected: expected).differences.map(\.field) == ["size"])
        // Nothing announced, nothing to compare: the size alone decides.
        #expect(MirrorVerdict.judge(MirrorObservation(outcome: .answered, httpStatus: 200, method: "HEAD", size: 10),
                                    expected: MirrorExpectation(size: 10, sha256: nil)).status == .ok)
        #expect(MirrorVerdict.judge(MirrorObservation(outcome: .missing, httpStatus: 410, method: "HEAD"), expected: expected).status == .missing)
    }
}

extension Data {
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        self.init(bytes)
    }
}
