import Crypto
import Foundation
import Testing
import TestOrigin

/// batchfetch against real nginx: a full download, and a resume that nginx validates with its own
/// ETag (If-Range), and a file rewritten on disk between the runs.
@Suite(.serialized, .enabled(if: NginxServer.binary != nil || NginxServer.required))
struct NginxInteropTests {
    static let size = 8 << 20

    private static func randomData(_ count: Int, seed: UInt64) -> Data {
        Data(OriginContent.generated(size: Int64(count), seed: seed).allBytes)
    }

    private static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    private func manifest(_ directory: TemporaryDirectory, url: String, extra: String = "") throws {
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: file, url: "\(url)", dest: file.bin\(extra)}
            """)
    }

    private func report(_ directory: TemporaryDirectory) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        return (object?["jobs"] as? [[String: Any]])?.first ?? [:]
    }

    @Test func fullDownloadFromNginx() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let data = Self.randomData(Self.size, seed: 1)
        try nginx.write("file.bin", data)
        let directory = try TemporaryDirectory()
        try manifest(directory, url: nginx.url("/file.bin"), extra: ", size: \(Self.size), checksum: \"sha256:\(Self.sha256(data))\"")
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["status"] as? String == "downloaded")
        #expect(job["checksum_verified"] as? Bool == true)
        #expect((job["etag"] as? String)?.hasPrefix("\"") == true)
        #expect(Self.sha256(try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))) == Self.sha256(data))
    }

    /// nginx as one of two mirrors of `sources: all` (a TestOrigin on 127.0.0.2 the other):
    /// each serves ranges validated by its own ETag — nginx's `"mtime-size"` is learned from its
    /// first 206 and sent back in `If-Range`, which nginx honours — and the file is whole.
    @Test func nginxIsOneOfTwoMirrorsAtOnce() async throws {
        // nginx paced (`limit_rate`) and TestOrigin not: both busy at once, and TestOrigin's
        // connections ask for several ranges each.
        let nginx = try await NginxServer(slowRate: "8m")
        defer { nginx.stop() }
        let size = 16 << 20
        let data = Self.randomData(size, seed: 5)
        try nginx.write("slow/file.bin", data)
        let other = try await TestOrigin.start(host: "127.0.0.2")
        other.serve("/file.bin", OriginFile(content: .bytes(Array(data))))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            per_host: 2
            jobs:
              - id: file
                urls: ['\(nginx.url("/slow/file.bin"))', '\(other.url("/file.bin"))']
                dest: file.bin
                size: \(size)
                checksum: sha256:\(Self.sha256(data))
                segments: 4
                sources: all
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let servedOther = other.bytesServed("/file.bin")
        let otherRequests = other.requests("/file.bin")
        try await other.shutdown()

        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["mirrors_used"] as? [Int] == [0, 1], "\(job)")
        #expect(Self.sha256(try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))) == Self.sha256(data))
        let ranges = nginx.accessLog().components(separatedBy: "\n").filter { $0.contains("\" 206 ") }
        #expect(ranges.count >= 2 && servedOther > 0 && servedOther < Int64(size))
        // TestOrigin's later ranges (when it had any) carry its own validator, never nginx's.
        let validators = Set(otherRequests.compactMap { $0.header("if-range") })
        let nginxETag = try #require(job["etag"] as? String)
        #expect(validators.count <= 1 && !validators.contains(nginxETag) && !output.stderr.contains("dropped"),
                "\(validators) \(output.stderr)")
    }

    /// Starts a rate-limited download and SIGKILLs it once a quarter is on disk.
    private func interrupt(_ directory: TemporaryDirectory) async throws -> Int64 {
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/file.bin.part").path
        let held = await BinaryRunner.signal(SIGKILL, to: process) { BinaryRunner.fileSize(part) >= Int64(Self.size / 4) }
        #expect(held, "the process never got there within the timeout")
        await BinaryRunner.exit(of: process)
        return BinaryRunner.fileSize(part)
    }

    @Test func resumeIsValidatedByNginxETag() async throws {
        let nginx = try await NginxServer(slowRate: "2m")
        defer { nginx.stop() }
        let data = Self.randomData(Self.size, seed: 2)
        try nginx.write("slow/file.bin", data)
        let directory = try TemporaryDirectory()
        try manifest(directory, url: nginx.url("/slow/file.bin"))
        let partSize = try await interrupt(directory)
        #expect(partSize > 0 && partSize < Int64(Self.size))

        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["http_status"] as? Int == 206)
        #expect(job["resumed_from"] as? Int64 == partSize)
        #expect(job["bytes_transferred"] as? Int64 == Int64(Self.size) - partSize)
        #expect(Self.sha256(try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))) == Self.sha256(data))
        #expect(nginx.accessLog().contains("\" 206 "))
    }

    @Test func fileRewrittenOnNginxIsFetchedWhole() async throws {
        let nginx = try await NginxServer(slowRate: "2m")
        defer { nginx.stop() }
        try nginx.write("slow/file.bin", Self.randomData(Self.size, seed: 3))
        let directory = try TemporaryDirectory()
        try manifest(directory, url: nginx.url("/slow/file.bin"))
        _ = try await interrupt(directory)

        // Another mtime second, so the ETag changes.
        let replacement = Self.randomData(Self.size, seed: 4)
        try nginx.write("slow/file.bin", replacement, modified: Date().addingTimeInterval(60))
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["http_status"] as? Int == 200, "\(job)")
        #expect(job["resumed_from"] == nil)
        #expect(Self.sha256(try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))) == Self.sha256(replacement))
    }

    /// A file rewritten with new content of the same size and the old mtime (rsync `-t
    /// --inplace` does this) keeps nginx's ETag and Last-Modified, so a killed download resumes
    /// under If-Range and the result fails the pinned checksum. It used to fail the run (and the
    /// partial was removed, so only the run after succeeded, issue 33); now the job fetches the
    /// file whole once more in the same run, and the report says so: no `resumed_from`, two
    /// attempts, the first a `checksum_mismatch`.
    @Test func aStalePartialWithTheSameValidatorsIsFetchedWholeInTheSameRun() async throws {
        let nginx = try await NginxServer(slowRate: "2m")
        defer { nginx.stop() }
        let modified = Date().addingTimeInterval(-3600)
        let replacement = Self.randomData(Self.size, seed: 6)
        try nginx.write("slow/file.bin", Self.randomData(Self.size, seed: 5), modified: modified)
        let directory = try TemporaryDirectory()
        try manifest(directory, url: nginx.url("/slow/file.bin"), extra: ", checksum: \"sha256:\(Self.sha256(replacement))\"")
        let partSize = try await interrupt(directory)
        try #require(partSize > 0 && partSize < Int64(Self.size))

        try nginx.write("slow/file.bin", replacement, modified: modified)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["status"] as? String == "downloaded", "\(job)")
        #expect(job["resumed_from"] == nil, "\(job)")
        #expect(job["attempts"] as? Int == 2, "\(job)")
        let log = (job["attempt_log"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
        #expect(log == ["checksum_mismatch"], "\(job)")
        #expect(Self.sha256(try Data(contentsOf: directory.url.appendingPathComponent("data/file.bin"))) == Self.sha256(replacement))
    }

    /// An attempt is one try against a mirror, not one range: a clean 40 MiB download, which
    /// URLSession fetches in 8 MiB ranges, reported `attempts: 5` (36 for 300 MB, issue 33).
    @Test func aCleanDownloadIsOneAttempt() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let data = Self.randomData(40 << 20, seed: 8)
        try nginx.write("file.bin", data)
        let directory = try TemporaryDirectory()
        try manifest(directory, url: nginx.url("/file.bin"), extra: ", segments: 1")
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 0, "\(output.stderr)")
        let job = try report(directory)
        #expect(job["attempts"] as? Int == 1, "\(job)")
        #expect(job["http_status"] as? Int != nil, "\(job)")
    }
}
