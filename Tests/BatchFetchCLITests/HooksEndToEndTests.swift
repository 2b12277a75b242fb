import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestOrigin

/// Hooks on the built binary (Docs/Hooks.md): a webhook and a healthchecks-style ping receiver
/// on loopback (TestOrigin's receiver records method, path, headers and body), commands run
/// without a shell, and every way a hook can fail — none of which changes the exit code.
@Suite(.serialized) struct HooksEndToEndTests {
    private func report(_ directory: TemporaryDirectory) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    private func body(_ upload: ReceivedUpload) -> String { String(decoding: upload.prefix, as: UTF8.self) }

    /// A world with one file to fetch, receivers at /hc (ping) and /chat (webhook), and a hook
    /// script that records its environment.
    private func world(jobs: String? = nil, hooks: String) async throws -> (TestOrigin, TemporaryDirectory) {
        let origin = try await TestOrigin.start()
        origin.serve("/a.bin", .generated(size: 1000, seed: 3))
        for path in ["/hc", "/hc/start", "/hc/fail", "/hc/0", "/hc/1", "/hc/5", "/chat"] { origin.receive(path) }
        let directory = try TemporaryDirectory()
        let script = try directory.write("hooks/record.sh", "#!/bin/sh\nenv | grep '^BATCHFETCH_' | sort > \"$1\"\necho recorded \"$BATCHFETCH_EVENT\"\n")
        chmod(script.path, 0o755)
        let text = """
            version: 1
            output_dir: data
            concurrency: 1
            hooks:
            \(hooks)
            jobs:
            \(jobs ?? "  - {id: a, url: \"{origin}/a.bin\"}")
            """
        try directory.write("m.yaml", text.replacingOccurrences(of: "{origin}", with: origin.url("")))
        return (origin, directory)
    }

    @Test func aSuccessfulRunPingsPostsItsSummaryAndRunsItsCommand() async throws {
        let (origin, directory) = try await world(hooks: """
              on_start: [{ping: "{origin}/hc"}]
              on_success:
                - {ping: "{origin}/hc"}
                - {url: "{origin}/chat", headers: {Authorization: "Bearer ${CHAT_TOKEN}"}}
              on_finish: [{command: [./hooks/record.sh, finish.env]}]
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url,
                                       environment: ["CHAT_TOKEN": "s3cret-chat-token"])
        try await origin.shutdown()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(origin.uploads("/hc/start").map(\.method) == ["POST"])
        let ping = try #require(origin.uploads("/hc").first)
        #expect(body(ping).hasPrefix("batchfetch run m.yaml: succeeded (exit 0)\n1 downloaded"))
        let chat = try #require(origin.uploads("/chat").first)
        #expect(chat.headers.first { $0.0.lowercased() == "authorization" }?.1 == "Bearer s3cret-chat-token")
        #expect(chat.headers.first { $0.0.lowercased() == "content-type" }?.1 == "application/json")
        let summary = try JSONSerialization.jsonObject(with: Data(chat.prefix)) as? [String: Any] ?? [:]
        #expect(summary["status"] as? String == "succeeded" && summary["exit_code"] as? Int == 0)
        #expect((summary["counts"] as? [String: Int])?["downloaded"] == 1)
        #expect(summary["manifest"] as? String == "m.yaml" && summary["version"] as? Int == 1)
        let environment = try String(contentsOf: directory.url.appendingPathComponent("finish.env"), encoding: .utf8)
        #expect(environment.contains("BATCHFETCH_EVENT=on_finish\n") && environment.contains("BATCHFETCH_EXIT_CODE=0\n"))
        #expect(environment.contains("BATCHFETCH_DOWNLOADED=1\n") && environment.contains("BATCHFETCH_BYTES=1000\n"))
        #expect(run.stderr.contains("hook: recorded on_finish"))
        let hooks = try report(directory)["hooks"] as? [[String: Any]] ?? []
        #expect(hooks.map { "\($0["event"]!) \($0["action"]!) \($0["ok"]!)" }
            == ["on_start ping 1", "on_success ping 1", "on_success url 1", "on_finish command 1"])
        let reportText = try String(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"), encoding: .utf8)
        #expect(!reportText.contains("s3cret-chat-token") && !run.stderr.contains("s3cret-chat-token"))
        let (schemaStatus, schemaText) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/report.schema.json", directory.url.appendingPathComponent("data/batchfetch-report.json").path])
        #expect(schemaStatus == 0, "\(schemaText)")
    }

    /// A failed run fires on_failure and on_finish; hooks that exit non-zero, hang past their
    /// timeout, answer 500 once or never answer are warnings and report entries, and the run
    /// still exits 1.
    @Test func failingHooksAreWarningsAndNeverChangeTheExitCode() async throws {
        let origin = try await TestOrigin.start()
        let directory = try TemporaryDirectory()
        origin.receive("/hc/fail")
        origin.receive("/hc/1")
        origin.receive("/flaky", OriginReceiver(faults: [.status(500)]))
        var silent = OriginReceiver()
        silent.held = true
        origin.receive("/silent", silent)
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            hooks:
              on_failure:
                - {ping: "\(origin.url("/hc"))"}
                - {command: [sh, -c, "echo to stderr >&2; exit 3"]}
                - {command: [sleep, "60"], timeout: 1s}
                - {url: "\(origin.url("/flaky"))"}
                - {url: "\(origin.url("/silent"))", timeout: 1s}
              on_finish: [{ping: "\(origin.url("/hc"))"}]
            jobs:
              - {id: gone, url: "\(origin.url("/gone.bin"))", retries: 0}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url)
        origin.updateReceiver("/silent") { $0.held = false }
        try await origin.shutdown()
        #expect(run.status == 1, "\(run.stderr)")
        #expect(origin.uploads("/hc/fail").count == 1 && origin.uploads("/hc/1").count == 1)
        #expect(origin.uploads("/flaky").count == 2)
        #expect(origin.requests("/silent").count == 3)
        let hooks = try report(directory)["hooks"] as? [[String: Any]] ?? []
        #expect(hooks.map { $0["ok"] as? Bool } == [true, false, false, true, false, true])
        #expect(hooks[1]["exit_code"] as? Int == 3)
        #expect((hooks[2]["error"] as? String)?.contains("sleep did not finish within") == true)
        #expect((hooks[3]["status"] as? Int).map { (200...299).contains($0) } == true)
        #expect((hooks[4]["error"] as? String)?.contains("after 3 tries") == true)
        #expect(run.stderr.contains("hook: to stderr"))
        #expect(run.stderr.contains("batchfetch: warning: hook on_failure command: sh exited 3"))
    }

    /// `--no-hooks` runs none; a run stopped at its budget (exit 5) fires only on_finish, and its
    /// ping carries the exit code.
    @Test func noHooksRunsNoneAndABudgetStopFiresOnlyOnFinish() async throws {
        let hooks = """
              on_success: [{ping: "{origin}/hc"}]
              on_failure: [{ping: "{origin}/hc"}]
              on_finish: [{ping: "{origin}/hc"}]
            """
        let (quietOrigin, quietDirectory) = try await world(hooks: hooks)
        let quiet = try await BinaryRunner.run(["run", "m.yaml", "--no-hooks"], in: quietDirectory.url)
        try await quietOrigin.shutdown()
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(quietOrigin.uploads("/hc").isEmpty && quietOrigin.uploads("/hc/0").isEmpty)
        #expect(try report(quietDirectory)["hooks"] == nil)

        let (origin, directory) = try await world(jobs: """
              - {id: a, url: "{origin}/a.bin"}
              - {id: b, url: "{origin}/a.bin", dest: b.bin}
            """, hooks: hooks)
        let stopped = try await BinaryRunner.run(["run", "m.yaml", "--max-bytes", "1"], in: directory.url)
        try await origin.shutdown()
        #expect(stopped.status == 5, "\(stopped.stderr)")
        #expect(origin.uploads("/hc").isEmpty && origin.uploads("/hc/fail").isEmpty)
        #expect(origin.uploads("/hc/5").count == 1)
    }

    /// SIGTERM while an on_start hook runs: the hook's process group is killed at once (not at
    /// its hour of timeout), the run ends as interrupted without a request, and on_failure still
    /// reports it.
    @Test func aSignalDuringAStartHookStopsItAndTheRun() async throws {
        let (origin, directory) = try await world(hooks: """
              on_start: [{command: [sh, -c, "touch started; exec sleep 600"], timeout: 1h}]
              on_failure: [{ping: "{origin}/hc"}]
            """)
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let started = directory.url.appendingPathComponent("started").path
        let sent = await BinaryRunner.signal(SIGTERM, to: process) { FileManager.default.fileExists(atPath: started) }
        #expect(sent, "the hook never started")
        // Far less than the hook's hour, far more than any loaded machine needs.
        let ended = await BinaryRunner.wait(timeout: 30) { !process.isRunning }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        await BinaryRunner.exit(of: process)
        try await origin.shutdown()
        #expect(ended, "the run waited for its hook after SIGTERM")
        #expect(process.terminationStatus == 143)
        let written = try report(directory)
        #expect(written["status"] as? String == "interrupted")
        let hooks = written["hooks"] as? [[String: Any]] ?? []
        #expect(hooks.map { "\($0["event"]!) \($0["action"]!) \($0["ok"]!)" } == ["on_start command 0", "on_failure ping 1"])
        #expect((hooks.first?["error"] as? String)?.contains("was stopped: the run was interrupted") == true)
        #expect(origin.uploads("/hc/fail").count == 1)
        #expect(origin.requests("/a.bin").isEmpty)
    }
}
