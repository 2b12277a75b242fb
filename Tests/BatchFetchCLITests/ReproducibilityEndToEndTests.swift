import Foundation
import Testing
import TestOrigin

/// `pin`, `check`, `verify` and `run --locked` as CI and dataset users run them: the built binary,
/// its exit codes (Docs/Contracts.md §1: 3 for drift and lock mismatch), and reports and lockfiles that
/// validate against their schemas.
@Suite(.serialized) struct ReproducibilityEndToEndTests {
    private func world() async throws -> (TestOrigin, TemporaryDirectory) {
        let origin = try await TestOrigin.start()
        origin.serve("/a/data.bin", .generated(size: 500_000, seed: 81))
        origin.serve("/b/data.bin", .generated(size: 500_000, seed: 81))
        let directory = try TemporaryDirectory()
        try directory.write("datasets.yaml", """
            version: 1
            output_dir: data
            defaults: {retries: 1, backoff: 10ms}
            jobs:
              - {id: data, urls: ["\(origin.url("/a/data.bin"))", "\(origin.url("/b/data.bin"))"]}
            """)
        return (origin, directory)
    }

    private func json(_ directory: TemporaryDirectory, _ path: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent(path))) as? [String: Any] ?? [:]
    }

    @Test func pinThenCheckFindsDriftAndExitsThree() async throws {
        let (origin, directory) = try await world()
        let pin = try await BinaryRunner.run(["pin", "datasets.yaml"], in: directory.url)
        #expect(pin.status == 0, "\(pin.stderr)")
        #expect(pin.stderr.contains("pinned 1 jobs (2 mirrors) in "))
        let lockPath = directory.url.appendingPathComponent("datasets.lock.json").path
        let (valid, text) = try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/lock.schema.json", lockPath])
        #expect(valid == 0, "\(text)")
        let pinnedBytes = try Data(contentsOf: URL(fileURLWithPath: lockPath))
        #expect(try await BinaryRunner.run(["pin", "datasets.yaml"], in: directory.url).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: lockPath)) == pinnedBytes)

        let clean = try await BinaryRunner.run(["check", "datasets.yaml"], in: directory.url)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.stderr.contains("check: 2 ok, 0 drift, 0 missing, 0 unreachable (against the lockfile)"))

        origin.replace("/b/data.bin", with: .generated(size: 500_000, seed: 82))
        let drift = try await BinaryRunner.run(["check", "datasets.yaml", "--deep"], in: directory.url)
        #expect(drift.status == 3)
        #expect(drift.stderr.contains("drift       data [1] \(origin.url("/b/data.bin"))  sha256: expected "))
        let report = try json(directory, "data/batchfetch-check.json")
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/report.schema.json", directory.url.appendingPathComponent("data/batchfetch-check.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")
        #expect(report["command"] as? String == "check" && report["status"] as? String == "failed")
        let mirrors = ((report["jobs"] as? [[String: Any]])?.first?["mirrors"] as? [[String: Any]]) ?? []
        #expect(mirrors.map { $0["status"] as? String } == ["ok", "drift"])

        origin.remove("/a/data.bin")
        let missing = try await BinaryRunner.run(["check", "datasets.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("missing     data [0] "))
    }

    @Test func verifyAndRunLockedExitThreeOnMismatch() async throws {
        let (origin, directory) = try await world()
        #expect(try await BinaryRunner.run(["pin", "datasets.yaml"], in: directory.url).status == 0)
        #expect(try await BinaryRunner.run(["verify", "datasets.yaml"], in: directory.url).status == 0)

        let file = directory.url.appendingPathComponent("data/data.bin")
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: Data("tampered".utf8))
        try handle.close()
        let verify = try await BinaryRunner.run(["verify", "datasets.yaml"], in: directory.url)
        #expect(verify.status == 3)
        #expect(verify.stderr.contains("drift       data -> data.bin  lock_mismatch: sha256 is "))
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/report.schema.json", directory.url.appendingPathComponent("data/batchfetch-verify.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")

        // Upstream changed the first mirror and the second is gone: a locked run refuses the new
        // content, and exits 3 although the last mirror's failure was a 404.
        try FileManager.default.removeItem(at: file)
        origin.replace("/a/data.bin", with: .generated(size: 500_000, seed: 83))
        origin.remove("/b/data.bin")
        let locked = try await BinaryRunner.run(["run", "datasets.yaml", "--locked"], in: directory.url)
        #expect(locked.status == 3, "\(locked.stderr)")
        let job = (try json(directory, "data/batchfetch-report.json")["jobs"] as? [[String: Any]])?.first
        let codes = ((job?["error"] as? [String: Any])?["attempts"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
        #expect(codes == ["lock_mismatch", "http_status"])
        #expect(!FileManager.default.fileExists(atPath: file.path))

        // A lock that no longer matches the manifest's jobs is refused before any download.
        try directory.write("datasets.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: other, url: "\(origin.url("/a/data.bin"))"}
            """)
        origin.resetCounters()
        let stale = try await BinaryRunner.run(["run", "datasets.yaml", "--locked"], in: directory.url)
        try await origin.shutdown()
        #expect(stale.status == 3)
        #expect(stale.stderr.contains("job 'other' is not in the lock"))
        #expect(stale.stderr.contains("the lock has job 'data', which the manifest no longer has"))
        #expect(origin.allRequests.isEmpty)
    }

    @Test func aFileRewrittenOnNginxIsDrift() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        try nginx.write("data.bin", Data(OriginContent.generated(size: 200_000, seed: 84).allBytes))
        let directory = try TemporaryDirectory()
        try directory.write("datasets.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: data, url: "\(nginx.url("/data.bin"))"}
            """)
        #expect(try await BinaryRunner.run(["pin", "datasets.yaml"], in: directory.url).status == 0)
        #expect(try await BinaryRunner.run(["check", "datasets.yaml"], in: directory.url).status == 0)
        // Another mtime second: nginx's ETag and date change.
        try nginx.write("data.bin", Data(OriginContent.generated(size: 200_000, seed: 85).allBytes),
                        modified: Date().addingTimeInterval(60))
        let check = try await BinaryRunner.run(["check", "datasets.yaml"], in: directory.url)
        #expect(check.status == 3)
        #expect(check.stderr.contains("etag: expected "))
        #expect(check.stderr.contains("last_modified: expected "))
        let deep = try await BinaryRunner.run(["check", "datasets.yaml", "--deep"], in: directory.url)
        #expect(deep.status == 3)
        #expect(deep.stderr.contains("sha256: expected "))
    }
    /// `pin --pieces` records each piece's sha256 (4 MiB by default, or the size given); a locked
    /// run holds a resumed download to them, repairing a piece the origin flips alone; a lock
    /// whose piece count cannot be the file's is refused before any request (exit 2).
    @Test func pinPiecesAreHeldToALockedRunAndABadCountIsRefused() async throws {
        let origin = try await TestOrigin.start()
        let size: Int64 = 12 << 20
        origin.serve("/big.bin", .generated(size: size, seed: 54))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: big, url: "\(origin.url("/big.bin"))", segments: 4}
            """)
        let pin = try await BinaryRunner.run(["pin", "--pieces", "m.yaml"], in: directory.url)
        #expect(pin.status == 0, "\(pin.stderr)")
        let defaultLength = (try json(directory, "m.lock.json")["jobs"] as? [String: [String: Any]])?["big"]?["pieces"] as? [String: Any]
        #expect(defaultLength?["length"] as? Int == 4 << 20 && (defaultLength?["sha256"] as? [String])?.count == 3)
        #expect(try await BinaryRunner.run(["pin", "m.yaml", "--pieces", "1MiB"], in: directory.url).status == 0)
        let pieces = (try json(directory, "m.lock.json")["jobs"] as? [String: [String: Any]])?["big"]?["pieces"] as? [String: Any]
        #expect(pieces?["length"] as? Int == 1 << 20 && (pieces?["sha256"] as? [String])?.count == 12)
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/lock.schema.json", directory.url.appendingPathComponent("m.lock.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")

        // The origin flips bytes of the sixth piece once: a locked run repairs that piece alone.
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("data/big.bin"))
        origin.update("/big.bin") {
            $0.corruptBytes = (5 << 20) + 7..<(5 << 20) + 9
            $0.corruptResponses = 1
        }
        origin.resetCounters()
        let locked = try await BinaryRunner.run(["run", "m.yaml", "--locked"], in: directory.url)
        #expect(locked.status == 0, "\(locked.stderr)")
        let job = (try json(directory, "data/batchfetch-report.json")["jobs"] as? [[String: Any]])?.first
        #expect(job?["pieces_repaired"] as? Int == 1)
        // The piece again, and no more than a hedge's worth besides (a loaded machine may hedge).
        let served = origin.bytesServed("/big.bin")
        #expect(served >= size + (1 << 20) && served <= size + (3 << 20), "\(served)")

        // Two hashes for a 12 MiB file in 1 MiB pieces: refused before any request.
        let lockURL = directory.url.appendingPathComponent("m.lock.json")
        var lock = try json(directory, "m.lock.json")
        var jobs = lock["jobs"] as? [String: [String: Any]] ?? [:]
        jobs["big"]?["pieces"] = ["length": 1 << 20, "sha256": Array((pieces?["sha256"] as? [String] ?? []).dropLast(10))]
        lock["jobs"] = jobs
        try JSONSerialization.data(withJSONObject: lock).write(to: lockURL)
        origin.resetCounters()
        let refused = try await BinaryRunner.run(["run", "m.yaml", "--locked"], in: directory.url)
        try await origin.shutdown()
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("job 'big'") && refused.stderr.contains("piece hashes do not fit"), "\(refused.stderr)")
        #expect(origin.allRequests.isEmpty)
    }
}
