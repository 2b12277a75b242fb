import Foundation
import Testing
import TestOrigin

/// `--metrics PATH` as node_exporter's textfile collector reads it: every file is accepted by
/// `promtool check metrics` (Prometheus's own checker), after a success, a failure, an interrupt,
/// a drift and an invalid manifest, and says what happened in its gauges.
@Suite(.serialized) struct MetricsTests {
    /// The series of a metrics file: `name{labels}` → value.
    private func series(_ path: URL) throws -> [String: Double] {
        let text = try String(contentsOf: path, encoding: .utf8)
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                Issue.record("not a sample line: \(line)")
                continue
            }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// `promtool check metrics < path`: exit status and what it said.
    private func promtool(_ path: URL) async throws -> (status: Int32, output: String) {
        let binary = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let binary else {
            Issue.record("promtool is missing (scripts/install-deps.sh installs Debian's prometheus package)")
            return (-1, "")
        }
        return try await BinaryRunner.tool([binary, "check", "metrics"], input: path)
    }

    private func checked(_ path: URL) async throws -> [String: Double] {
        let (status, output) = try await promtool(path)
        #expect(status == 0, "promtool: \(output)\n\((try? String(contentsOf: path, encoding: .utf8)) ?? "")")
        return try series(path)
    }

    @Test func aSuccessThenAFailureKeepTheLastSuccessTime() async throws {
        let origin = try await TestOrigin.start()
        origin.serve("/a.bin", .generated(size: 100_000, seed: 5))
        let directory = try TemporaryDirectory()
        // A quote and a backslash in the manifest's path: the label value must be escaped.
        let manifest = #"we"ird\dir/m.yaml"#
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent(#"we"ird\dir"#), withIntermediateDirectories: true)
        try directory.write(manifest, """
            version: 1
            output_dir: data
            jobs:
              - {id: a, url: "\(origin.url("/a.bin"))"}
            """)
        let metrics = directory.url.appendingPathComponent("node/batchfetch.prom")
        let labels = #"manifest="we\"ird\\dir/m.yaml",command="run""#

        let first = try await BinaryRunner.run(["run", manifest, "--metrics", metrics.path, "--metrics-per-job"], in: directory.url)
        #expect(first.status == 0, "\(first.stderr)")
        let success = try await checked(metrics)
        #expect(success["batchfetch_exit_code{\(labels)}"] == 0)
        #expect(success["batchfetch_jobs{status=\"downloaded\",\(labels)}"] == 1)
        #expect(success["batchfetch_jobs{status=\"failed\",\(labels)}"] == 0)
        #expect(success["batchfetch_bytes_transferred{\(labels)}"] == 100_000)
        #expect(success["batchfetch_job_status{job=\"a\",status=\"downloaded\",\(labels)}"] == 1)
        let end = try #require(success["batchfetch_run_end_time_seconds{\(labels)}"])
        let start = try #require(success["batchfetch_run_start_time_seconds{\(labels)}"])
        #expect(start <= end && abs(end - Date().timeIntervalSince1970) < 600)
        #expect(success["batchfetch_last_success_time_seconds{\(labels)}"] == end)

        // A job whose file is gone: the run fails, and the last success is still the first run's.
        try directory.write(manifest, """
            version: 1
            output_dir: data
            jobs:
              - {id: a, url: "\(origin.url("/a.bin"))"}
              - {id: gone, url: "\(origin.url("/gone.bin"))"}
            """)
        let second = try await BinaryRunner.run(["run", manifest, "--metrics", metrics.path], in: directory.url)
        try await origin.shutdown()
        #expect(second.status == 1, "\(second.stderr)")
        let failure = try await checked(metrics)
        #expect(failure["batchfetch_exit_code{\(labels)}"] == 1)
        #expect(failure["batchfetch_jobs{status=\"failed\",\(labels)}"] == 1)
        #expect(failure["batchfetch_jobs{status=\"up_to_date\",\(labels)}"] == 1)
        #expect(failure["batchfetch_last_success_time_seconds{\(labels)}"] == end)
        #expect(failure.keys.allSatisfy { !$0.hasPrefix("batchfetch_job_") }, "no per-job series unless asked")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: metrics.deletingLastPathComponent().path)
        #expect(leftovers == ["batchfetch.prom"], "the file is replaced by a rename, with no temporary left")
    }

    @Test func anInterruptedRunSaysSo() async throws {
        let origin = try await TestOrigin.start()
        // Above 4 MiB, so the part has its name while it is written (a smaller one is unnamed).
        var file = OriginFile.generated(size: 16 << 20, seed: 6)
        file.pauseAfterServed = 2 << 20
        file.paused = true
        origin.serve("/slow.bin", file)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: slow, url: "\(origin.url("/slow.bin"))", segments: 1}
            """)
        let process = try BinaryRunner.start(["run", "m.yaml", "--metrics", "run.prom"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/slow.bin.part").path
        let sent = await BinaryRunner.signal(SIGINT, to: process) { BinaryRunner.fileSize(part) >= 1 << 20 }
        #expect(sent, "the run never reached the pause")
        await BinaryRunner.exit(of: process)
        try await origin.shutdown()
        #expect(process.terminationStatus == 130)
        let values = try await checked(directory.url.appendingPathComponent("run.prom"))
        let labels = #"manifest="m.yaml",command="run""#
        #expect(values["batchfetch_exit_code{\(labels)}"] == 130)
        #expect(values["batchfetch_jobs{status=\"interrupted\",\(labels)}"] == 1)
        #expect(values["batchfetch_last_success_time_seconds{\(labels)}"] == 0)
    }

    @Test func aCheckCountsDriftAndAnInvalidManifestStillWritesItsExitCode() async throws {
        let origin = try await TestOrigin.start()
        origin.serve("/a.bin", .generated(size: 50_000, seed: 7))
        origin.serve("/b.bin", .generated(size: 50_000, seed: 8))
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: a, url: "\(origin.url("/a.bin"))"}
              - {id: b, url: "\(origin.url("/b.bin"))"}
            """)
        #expect(try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url).status == 0)
        origin.replace("/b.bin", with: .generated(size: 50_000, seed: 9))
        let check = try await BinaryRunner.run(["check", "m.yaml", "--deep", "--metrics", "check.prom"], in: directory.url)
        try await origin.shutdown()
        #expect(check.status == 3, "\(check.stderr)")
        let values = try await checked(directory.url.appendingPathComponent("check.prom"))
        let labels = #"manifest="m.yaml",command="check""#
        #expect(values["batchfetch_exit_code{\(labels)}"] == 3)
        #expect(values["batchfetch_drift_jobs{verdict=\"drift\",\(labels)}"] == 1)
        #expect(values["batchfetch_drift_jobs{verdict=\"ok\",\(labels)}"] == 1)
        #expect(values["batchfetch_drift_jobs{verdict=\"missing\",\(labels)}"] == 0)

        try directory.write("bad.yaml", "version: 1\njobs:\n  - {id: x}\n")
        let invalid = try await BinaryRunner.run(["verify", "bad.yaml", "--metrics", "verify.prom"], in: directory.url)
        #expect(invalid.status == 2)
        let failed = try await checked(directory.url.appendingPathComponent("verify.prom"))
        #expect(failed[#"batchfetch_exit_code{manifest="bad.yaml",command="verify"}"#] == 2)
        #expect(failed.keys.allSatisfy { !$0.hasPrefix("batchfetch_jobs") }, "no job counts without a report")
    }

    /// A metrics path that cannot be written is refused before any work, naming the option.
    @Test func anUnwritablePathIsRefusedFirst() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", "version: 1\noutput_dir: data\njobs:\n  - {id: a, url: \"http://127.0.0.1:9/a\"}\n")
        try directory.write("blocker", "a file where a directory should be\n")
        let refused = try await BinaryRunner.run(["run", "m.yaml", "--metrics", "blocker/run.prom"], in: directory.url)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--metrics blocker/run.prom cannot be written"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data").path), "no work was done")
    }
}
