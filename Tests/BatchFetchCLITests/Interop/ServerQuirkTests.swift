import Crypto
import Foundation
import Testing
import TestOrigin

/// Quirks of real servers that once broke batchfetch (issue 33), each against the server that
/// showed it, through the built binary, on the transport the suite runs on. Each test names the
/// quirk it guards, so the next reader knows why it exists.
@Suite(.serialized) struct ServerQuirkTests {
    static var required: Bool { NginxServer.required }

    private static func data(_ count: Int, seed: UInt64) -> Data {
        Data(OriginContent.generated(size: Int64(count), seed: seed).allBytes)
    }

    private static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    private static func jobs(_ directory: TemporaryDirectory, report: String = "batchfetch-report.json") throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/\(report)"))) as? [String: Any]
        let jobs = (object?["jobs"] as? [[String: Any]]) ?? []
        return Dictionary(jobs.map { (($0["id"] as? String) ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Caddy answers any range request for an empty file with `416`, `Content-Range: bytes */0`
    /// and a 33-byte text body ("invalid range: failed to overlap"). URLSession delivered that
    /// body although the head was refused: `check --deep` hashed it as the file (sha256 b5d7…,
    /// exit 3 on an unchanged mirror) and `run` counted it as transferred.
    @Test(.enabled(if: PeerServer.binary(.caddy) != nil || required))
    func caddysEmptyFileIsEmptyForRunAndDeepCheck() async throws {
        let caddy = try await PeerServer(.caddy)
        defer { caddy.stop() }
        let other = Self.data(1000, seed: 7)
        try caddy.write("empty1.dat", Data(), age: 100)
        try caddy.write("k.bin", other, age: 100)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: e, url: "\(caddy.url("/empty1.dat"))", checksum: "sha256:\(Self.sha256(Data()))"}
              - {id: k, url: "\(caddy.url("/k.bin"))", checksum: "sha256:\(Self.sha256(other))"}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)")
        let jobs = try Self.jobs(directory)
        #expect(jobs["e"]?["bytes_transferred"] as? Int == 0, "\(jobs)")
        #expect(jobs["k"]?["bytes_transferred"] as? Int == 1000, "\(jobs)")

        let check = try await BinaryRunner.run(["check", "m.yaml", "--deep"], in: directory.url)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let checked = try Self.jobs(directory, report: "batchfetch-check.json")
        #expect(checked["e"]?["status"] as? String == "ok", "\(checked)")
    }

    /// `%XX` beside raw non-ASCII: Foundation's URL parser encoded the whole string again, `%`
    /// included, so `/ü%20b.bin` was asked as `/%C3%BC%2520b.bin` (404 on nginx, apache2, caddy).
    @Test(.enabled(if: PeerServer.binary(.caddy) != nil || required))
    func aURLWithRawUnicodeAndAnEscapeIsAskedAsWritten() async throws {
        let caddy = try await PeerServer(.caddy)
        defer { caddy.stop() }
        try caddy.write("ü b.bin", Data("hello".utf8), age: 100)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: u, url: "\(caddy.url("/ü%20b.bin"))", dest: u.bin}
            """)
        let validate = try await BinaryRunner.run(["validate", "m.yaml"], in: directory.url)
        #expect(validate.status == 0, "\(validate.stderr)")
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("data/u.bin")) == Data("hello".utf8))
    }

    /// `python3 -m http.server` has no Range support: a large file beside small ones at
    /// concurrency 4 took 115–380 MiB on URLSession, while the refused transfers kept reading
    /// (issue 33; the bytes are counted exactly in `IntegrityTests.aServerWithoutRangesCostsOneBody`,
    /// memory in bench/hostile-bench.py). Here: the real server, every file right, one attempt
    /// each (an attempt is one try, not one range), and `check --deep` agrees.
    @Test(.enabled(if: PeerServer.binary(.plainPython) != nil || required))
    func aServerWithoutRangesServesABatchOnce() async throws {
        let python = try await PeerServer(.plainPython)
        defer { python.stop() }
        var lines = ""
        var digests: [String: String] = [:]
        for (index, size) in [40 << 20, 1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20].enumerated() {
            let content = Self.data(size, seed: UInt64(60 + index))
            try python.write("f\(index).bin", content, age: 100)
            digests["f\(index)"] = Self.sha256(content)
            lines += "  - {id: f\(index), url: \"\(python.url("/f\(index).bin"))\", checksum: \"sha256:\(Self.sha256(content))\"}\n"
        }
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", "version: 1\noutput_dir: data\nconcurrency: 4\njobs:\n" + lines)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)")
        let jobs = try Self.jobs(directory)
        for (id, digest) in digests {
            #expect(jobs[id]?["status"] as? String == "downloaded")
            #expect(jobs[id]?["attempts"] as? Int == 1, "\(id): \(jobs[id] ?? [:])")
            #expect((jobs[id]?["checksums"] as? [String: String])?["sha256"] == digest)
        }
        let check = try await BinaryRunner.run(["check", "m.yaml", "--deep"], in: directory.url)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }
}
