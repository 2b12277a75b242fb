import Crypto
import Foundation
import Testing
import TestOrigin

/// batchfetch against real servers of other kinds than nginx: `python3 -m http.server` (no Range
/// support at all) and lighttpd (ranges without validators). A download killed midway and run
/// again, with the file unchanged or rewritten in between, always ends with exactly the server's
/// current bytes — never an old prefix glued to a new tail.
@Suite(.serialized) struct PeerInteropTests {
    static let size = 8 << 20
    /// A second per file: time to kill the first run midway even on a loaded machine.
    static let rate = 4 << 20

    /// Whether tests must fail (rather than skip) when a peer is missing: set in CI.
    static var required: Bool { NginxServer.required }

    static let kinds = PeerServer.Kind.paced.filter { PeerServer.binary($0) != nil || required }

    private func report(_ directory: TemporaryDirectory) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        return (object?["jobs"] as? [[String: Any]])?.first ?? [:]
    }

    /// Starts a download and SIGKILLs it once a quarter of the file is in the part.
    private func killMidway(_ directory: TemporaryDirectory) async throws -> Int64 {
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/file.bin.part").path
        let started = Date()
        let seen = await BinaryRunner.signal(SIGKILL, to: process) { BinaryRunner.fileSize(part) >= Int64(Self.size / 4) }
        await BinaryRunner.exit(of: process)
        let log = (try? String(contentsOf: directory.url.appendingPathComponent("stderr.log"), encoding: .utf8)) ?? ""
        #expect(seen && process.terminationReason == .uncaughtSignal,
                "waited \(Date().timeIntervalSince(started))s; first run: \(log)")
        return BinaryRunner.fileSize(part)
    }

    @Test(arguments: kinds, [false, true])
    func killedDownloadEndsWithTheServersCurrentBytes(kind: PeerServer.Kind, rewritten: Bool) async throws {
        let server = try await PeerServer(kind, bytesPerSecond: Self.rate)
        defer { server.stop() }
        let original = Data(OriginContent.generated(size: Int64(Self.size), seed: 41).allBytes)
        try server.write("file.bin", original, age: 100)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: file, url: "\(server.url("/file.bin"))", dest: file.bin, size: \(Self.size)}
            """)
        let partSize = try await killMidway(directory)
        #expect(partSize >= Int64(Self.size / 4), "the first run wrote \(partSize) bytes before the kill")
        // A kill that came too late (a loaded machine) would leave nothing to test.
        try #require(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data/file.bin").path))

        let expected = rewritten ? Data(OriginContent.generated(size: Int64(Self.size), seed: 42).allBytes) : original
        if rewritten { try server.write("file.bin", expected, age: 0) }
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        // (Digests, not the bytes: a failing comparison of 8 MiB would spend minutes on a diff.)
        let stored = try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))
        let job = try report(directory)
        #expect(Self.sha256(stored) == Self.sha256(expected), "\(stored.count) bytes; \(job); \(rerun.stderr)")
        #expect(job["status"] as? String == "downloaded")
        // Neither server lets a resume be validated (no Range; no validator), so the file came
        // whole, and the report says so.
        #expect(job["resumed_from"] == nil, "\(job)")
        #expect(job["checksums"].flatMap { ($0 as? [String: String])?["sha256"] } == Self.sha256(expected))
    }

    static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}
