import BatchFetchEngine
import BatchFetchNetwork
import Foundation
import Testing
import TestOrigin

/// The built binary under the conditions cron and CI meet: signals, a second run on the same
/// directory, --fail-fast, the same URL twice, and the machine-readable outputs (--events,
/// --junit), each with the exit code Docs/Contracts.md §1 gives it.
@Suite(.serialized) struct RunControlTests {
    static let size: Int64 = 16 << 20

    /// A trickled 16 MiB file (4 MiB/s) that stops at half until the test lets it go on (no
    /// run can finish before the test's signal, however loaded the machine), and a manifest for
    /// it.
    private func slowWorld() async throws -> (TestOrigin, TemporaryDirectory) {
        let origin = try await TestOrigin.start()
        var file = OriginFile.generated(size: Self.size, seed: 31)
        file.trickleBytesPerSecond = 4 << 20
        file.pauseAfterServed = Self.size / 2
        file.paused = true
        origin.serve("/slow.bin", file)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: slow, url: "\(origin.url("/slow.bin"))"}
            """)
        return (origin, directory)
    }

    private func report(_ directory: TemporaryDirectory) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// Sends `signal` once the part holds `bytes`.
    private func signal(_ signal: Int32, to process: SpawnedProcess, _ directory: TemporaryDirectory, atPart bytes: Int64) async {
        let part = directory.url.appendingPathComponent("data/slow.bin.part").path
        let held = await BinaryRunner.signal(signal, to: process) { BinaryRunner.fileSize(part) >= bytes }
        #expect(held, "the process never got there within the timeout")
    }

    private func stderr(_ directory: TemporaryDirectory) throws -> String {
        try String(contentsOf: directory.url.appendingPathComponent("stderr.log"), encoding: .utf8)
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func signalStopsTheRunKeepsThePartialAndTheRerunResumes(signal: Int32, code: Int32) async throws {
        let (origin, directory) = try await slowWorld()
        let process = try BinaryRunner.start(["run", "m.yaml", "--progress", "line"], in: directory.url)
        await self.signal(signal, to: process, directory, atPart: 2 << 20)
        await BinaryRunner.exit(of: process)
        let log = try stderr(directory)
        #expect(process.terminationStatus == code, "\(log)")
        let interrupted = try report(directory)
        #expect(interrupted["status"] as? String == "interrupted")
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/report.schema.json", directory.url.appendingPathComponent("data/batchfetch-report.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")
        let job = (interrupted["jobs"] as? [[String: Any]])?.first
        #expect(job?["status"] as? String == "interrupted")
        #expect((job?["error"] as? [String: Any])?["code"] as? String == "interrupted")
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data/slow.bin.part.json").path))
        #expect(log.contains(signal == SIGINT ? "SIGINT: stopping" : "SIGTERM: stopping"))

        origin.update("/slow.bin") {
            $0.trickleBytesPerSecond = nil
            $0.paused = false
        }
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let resumed = (try report(directory)["jobs"] as? [[String: Any]])?.first
        #expect((resumed?["resumed_from"] as? Int64 ?? 0) >= 2 << 20)
    }

    /// A signal ends the run promptly whatever its transfer is doing: a small file (one request,
    /// no segments) and a larger one (segments), each stalled at half by a gate that never
    /// opens, with an idle timeout of an hour so that only the signal can end them.
    @Test(arguments: [Int64(1 << 20), Int64(6 << 20)])
    func aSignalEndsAStalledTransferAtOnceWhateverItsSize(size: Int64) async throws {
        let origin = try await TestOrigin.start()
        var file = OriginFile.generated(size: size, seed: 5)
        file.pauseAfterServed = size / 2
        file.paused = true
        origin.serve("/stalled.bin", file)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            defaults: {timeout: 1h, segments: 4}
            jobs:
              - {id: stalled, url: "\(origin.url("/stalled.bin"))"}
            """)
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let held = await BinaryRunner.signal(SIGTERM, to: process) { origin.bytesServed("/stalled.bin") >= size / 2 }
        #expect(held, "the transfer never reached the gate")
        // Far less than the hour of idle timeout, far more than any loaded machine needs.
        let ended = await BinaryRunner.wait(timeout: 20) { !process.isRunning }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        await BinaryRunner.exit(of: process)
        let ranges = origin.requests("/stalled.bin").map { $0.header("Range") ?? "whole" }
        try await origin.shutdown()
        #expect(ended, "the run went on after SIGTERM: \(ranges)")
        let log = try stderr(directory)
        #expect(process.terminationStatus == 143, "\(log)")
        #expect(try report(directory)["status"] as? String == "interrupted")
    }

    /// A spent budget: the run exits 5, says which jobs were deferred and why, and its report
    /// passes the schema; a budget of zero is a usage error.
    @Test func aSpentBudgetExitsFiveWithAValidReport() async throws {
        let origin = try await TestOrigin.start()
        origin.serve("/a", .generated(size: 1000, seed: 1))
        origin.serve("/b", .generated(size: 1000, seed: 2))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            concurrency: 1
            jobs:
              - {id: a, url: "\(origin.url("/a"))"}
              - {id: b, url: "\(origin.url("/b"))"}
            """)
        let spent = try await BinaryRunner.run(["run", "m.yaml", "--max-bytes", "1", "--progress", "line", "--junit", "junit.xml"],
                                         in: directory.url)
        #expect(spent.status == 5, "\(spent.stderr)")
        #expect(spent.stderr.contains("deferred    b  max_bytes spent"))
        #expect(try report(directory)["status"] as? String == "deferred")
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/report.schema.json", directory.url.appendingPathComponent("data/batchfetch-report.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")
        let junit = try String(contentsOf: directory.url.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("<skipped message=\"deferred: max_bytes spent\"/>"))

        let zero = try await BinaryRunner.run(["run", "m.yaml", "--max-duration", "0s"], in: directory.url)
        #expect(zero.status == 2 && zero.stderr.contains("--max-duration"), "\(zero.stderr)")
        let window = try await BinaryRunner.run(["run", "m.yaml", "--bwlimit", "25:00,1M"], in: directory.url)
        #expect(window.status == 2 && window.stderr.contains("--bwlimit: '25:00,1M': '25:00' is not a time of day HH:MM"), "\(window.stderr)")
        let rest = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(rest.status == 0, "\(rest.stderr)")
        #expect(origin.requests("/a").count == 1 && origin.requests("/b").count == 1)
    }

    /// `timeout` signals the child and its process group: one request arrives twice. The same
    /// signal again within a moment still stops the run cleanly, with its report.
    @Test func theSameSignalTwiceInAMomentIsOneRequest() async throws {
        let (origin, directory) = try await slowWorld()
        let process = try BinaryRunner.start(["run", "m.yaml", "--progress", "line"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/slow.bin.part").path
        let sent = await BinaryRunner.signal(SIGTERM, to: process, times: 2) { BinaryRunner.fileSize(part) >= 1 << 20 }
        #expect(sent)
        await BinaryRunner.exit(of: process)
        try await origin.shutdown()
        let log = try stderr(directory)
        #expect(process.terminationStatus == 143, "\(log)")
        #expect(!log.contains("second signal"))
        #expect(try report(directory)["status"] as? String == "interrupted")
    }

    @Test func secondRunOnTheSameDirectoryExitsFourNamingTheHolder() async throws {
        let (origin, directory) = try await slowWorld()
        let holder = try RunLock(directory: directory.url.appendingPathComponent("data").path, wait: false)
        let second = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(second.status == 4)
        #expect(second.stderr.contains("another batchfetch run (pid \(getpid())) holds "))
        #expect(second.stderr.contains("data/.batchfetch.lock"))
        #expect(origin.requests("/slow.bin").isEmpty)

        // --wait-lock waits for the holder instead.
        origin.update("/slow.bin") {
            $0.trickleBytesPerSecond = nil
            $0.paused = false
        }
        let waiting = try BinaryRunner.start(["run", "m.yaml", "--wait-lock"], in: directory.url)
        let log = directory.url.appendingPathComponent("stderr.log")
        let said = await BinaryRunner.wait {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("waiting for the run lock")
        }
        #expect(said && waiting.isRunning, "it should say it waits, and wait")
        #expect(origin.requests("/slow.bin").isEmpty)
        holder.release()
        await BinaryRunner.exit(of: waiting)
        try await origin.shutdown()
        #expect(waiting.terminationStatus == 0)
    }

    @Test func failFastStartsNothingAfterTheFirstFailure() async throws {
        let origin = try await TestOrigin.start()
        var missing = OriginFile.text("")
        missing.fixedStatus = 404
        origin.serve("/missing", missing)
        origin.serve("/ok", .text("ok"))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            concurrency: 1
            jobs:
              - {id: first, url: "\(origin.url("/missing"))"}
              - {id: second, url: "\(origin.url("/ok"))"}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml", "--fail-fast"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 1)
        #expect(output.stderr.contains("skipped     second  not started: --fail-fast after 'first' failed"))
        #expect(origin.requests("/ok").isEmpty)
    }

    @Test func theSameURLTwiceIsFetchedOnceAndLinked() async throws {
        let origin = try await TestOrigin.start()
        let content = OriginContent.generated(size: 3 << 20, seed: 32)
        origin.serve("/shared.bin", OriginFile(content: content))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: a, url: "\(origin.url("/shared.bin"))", dest: a/shared.bin}
              - {id: b, url: "\(origin.url("/shared.bin"))", dest: b/shared.bin}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let served = origin.bytesServed("/shared.bin")
        try await origin.shutdown()
        #expect(output.status == 0, "\(output.stderr)")
        #expect(served == 3 << 20)
        let a = try Data(contentsOf: directory.url.appendingPathComponent("data/a/shared.bin"))
        let b = try Data(contentsOf: directory.url.appendingPathComponent("data/b/shared.bin"))
        #expect(a == b && a == Data(content.allBytes))
        let jobs = try report(directory)["jobs"] as? [[String: Any]] ?? []
        #expect(jobs.first { $0["id"] as? String == "b" }?["copied_from"] as? String == "a")
        #expect(output.stderr.contains("downloaded  b -> b/shared.bin  3.0 MiB, the same URL as 'a' (linked or copied)"))
    }

    @Test func eventsAndJUnitDescribeTheRun() async throws {
        let origin = try await TestOrigin.start()
        origin.serve("/ok", .text("ok"))
        var missing = OriginFile.text("")
        missing.fixedStatus = 404
        origin.serve("/missing", missing)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: ok, url: "\(origin.url("/ok"))"}
              - {id: gone, url: "\(origin.url("/missing"))"}
              - {id: after, url: "\(origin.url("/ok"))", dest: after, depends_on: [gone]}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml", "--events", "-", "--junit", "junit.xml"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 1)
        let events = output.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.count == output.stdout.split(separator: "\n").count)
        #expect(events.allSatisfy { $0["time"] is String })
        let kinds = events.compactMap { $0["event"] as? String }
        #expect(kinds.last == "run_finished" && kinds.filter { $0 == "run_finished" }.count == 1)
        #expect(kinds.filter { $0 == "job_started" }.count == 2)
        #expect(kinds.filter { $0 == "job_finished" }.count == 3)
        let skipped = events.first { ($0["result"] as? [String: Any])?["id"] as? String == "after" }?["result"] as? [String: Any]
        #expect(skipped?["status"] as? String == "skipped")
        #expect((events.last?["summary"] as? [String: Any])?["failed"] as? Int == 1)

        let junit = try String(contentsOf: directory.url.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains(#"<testsuites name="batchfetch" tests="3" failures="1" skipped="1""#))
        #expect(junit.contains(#"<testcase classname="batchfetch.run" name="gone""#))
        #expect(junit.contains(#"<failure type="http_status" message="HTTP 404 from \#(origin.url("/missing"))">"#))
        #expect(junit.contains(#"<skipped message="dependency &apos;gone&apos; failed"/>"#))
    }
}

/// `http_proxy` and `no_proxy` are honoured: the origin stands in for a forward proxy, and the
/// URL's host does not resolve at all. URLSession (libcurl) sends an absolute URI to the proxy;
/// AsyncHTTPClient always tunnels with CONNECT, which TestOrigin does not serve, so on nio only
/// the reading of the environment is tested (`ProxySettingsTests`).
@Suite(.enabled(if: TransportKind.default == .urlsession)) struct ProxyEnvironmentTests {
    @Test func downloadsGoThroughTheProxyOfTheEnvironment() async throws {
        let proxy = try await TestOrigin.start()
        proxy.serve("/f.txt", .text("through the proxy\n"))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            defaults: {retries: 0}
            jobs:
              - {id: f, url: "http://batchfetch-proxied.invalid/f.txt"}
            """)
        let proxied = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url,
                                           environment: ["http_proxy": proxy.url("")])
        let hostSeen = proxy.requests("/f.txt").first?.header("host")
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(try String(contentsOf: directory.url.appendingPathComponent("data/f.txt"), encoding: .utf8) == "through the proxy\n")
        #expect(hostSeen == "batchfetch-proxied.invalid")

        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("data"))
        let direct = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: [
            "http_proxy": proxy.url(""), "no_proxy": ".invalid",
        ])
        try await proxy.shutdown()
        #expect(direct.status == 1)
        #expect(direct.stderr.contains("failed      f  connection: "))
    }
}
