@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import Testing

/// Hooks' decisions as values: which events an exit code fires, where a ping goes, when a URL
/// hook is tried again, a command's environment, and the summary's bounds.
@Suite struct HookPlanTests {
    @Test func theExitCodeChoosesTheClosingEvents() {
        #expect(HookPlan.closingEvents(exitCode: 0) == [.onSuccess, .onFinish])
        for code: Int32 in [1, 3, 130, 143] { #expect(HookPlan.closingEvents(exitCode: code) == [.onFailure, .onFinish]) }
        // Stopped at its budget: neither a success nor a failure.
        #expect(HookPlan.closingEvents(exitCode: 5) == [.onFinish])
    }

    @Test func aPingGoesWhereHealthchecksExpectsIt() {
        let base = "https://hc-ping.com/5f1e"
        #expect(HookPlan.pingURL(base, event: .onStart, exitCode: nil) == base + "/start")
        #expect(HookPlan.pingURL(base, event: .onSuccess, exitCode: 0) == base)
        #expect(HookPlan.pingURL(base, event: .onFailure, exitCode: 1) == base + "/fail")
        #expect(HookPlan.pingURL(base, event: .onFinish, exitCode: 143) == base + "/143")
        // A trailing slash is not doubled; a query stays at the end.
        #expect(HookPlan.pingURL(base + "/", event: .onFailure, exitCode: 1) == base + "/fail")
        #expect(HookPlan.pingURL(base + "?rid=7", event: .onStart, exitCode: nil) == base + "/start?rid=7")
    }

    @Test func aURLHookIsTriedThreeTimesOnlyForWhatARetryCanMend() {
        #expect(HookPlan.retry(after: 1, status: 500, failure: nil) == 1)
        #expect(HookPlan.retry(after: 2, status: 503, failure: nil) == 2)
        #expect(HookPlan.retry(after: 3, status: 503, failure: nil) == nil)
        #expect(HookPlan.retry(after: 1, status: 429, failure: nil) == 1)
        #expect(HookPlan.retry(after: 1, status: 404, failure: nil) == nil)
        #expect(HookPlan.retry(after: 1, status: 200, failure: nil) == nil)
        #expect(HookPlan.retry(after: 1, status: nil, failure: BatchFetchError(.connection, "refused")) == 1)
        #expect(HookPlan.retry(after: 1, status: nil, failure: BatchFetchError(.timeout, "idle")) == 1)
        #expect(HookPlan.retry(after: 1, status: nil, failure: BatchFetchError(.tls, "untrusted")) == nil)
    }

    private func report(failed: Int) -> RunReport {
        var results: [JobResult] = (0..<failed).map { index in
            var result = JobResult(id: "job-\(index)", status: .failed, dest: "f\(index)")
            result.failure = BatchFetchError(.httpStatus, "HTTP 404 " + String(repeating: "x", count: 200))
            return result
        }
        results.append(JobResult(id: "ok", status: .downloaded, dest: "ok"))
        let manifest = Manifest(path: "m.yaml", outputDirectory: "/tmp", jobs: [])
        var options = RunOptions()
        options.manifestSHA256 = String(repeating: "0", count: 64)
        return RunReport.ofRun(manifest: manifest, options: options, results: results, interrupted: false,
                               startDate: Date(), started: .now())
    }

    /// A run with a thousand failures still sends a summary a chat and healthchecks accept.
    @Test func theSummaryIsBoundedWhateverTheRun() throws {
        let summary = RunSummary(report(failed: 1000), manifest: "m.yaml", exitCode: 1, reportPath: "/r.json")
        #expect(summary.failed?.count == RunSummary.failedLimit)
        #expect(summary.counts?["failed"] == 1000 && summary.counts?["downloaded"] == 1 && summary.counts?["deferred"] == 0)
        #expect(summary.text.utf8.count <= RunSummary.textLimit)
        #expect(summary.text.hasPrefix("batchfetch run m.yaml: failed (exit 1)\n1 downloaded, 0 up to date, 1000 failed, 0 skipped"))
        let json = try JSONSerialization.jsonObject(with: summary.json) as? [String: Any] ?? [:]
        #expect(Set(json.keys) == ["version", "command", "manifest", "status", "exit_code", "started_at", "finished_at",
                                   "duration_seconds", "counts", "bytes_transferred", "failed", "report"])
        // An interrupted run's summary says so, whatever its report's own status.
        #expect(RunSummary(report(failed: 0), manifest: "m.yaml", exitCode: 143, reportPath: "/r.json").status == "interrupted")
        // on_start has no result fields.
        let starting = try JSONSerialization.jsonObject(with: RunSummary.starting(manifest: "m.yaml", report: "/r.json", at: Date()).json)
        #expect(Set((starting as? [String: Any] ?? [:]).keys) == ["version", "command", "manifest", "started_at", "report"])
    }

    @Test func aCommandIsToldTheEventAndTheCounts() {
        let summary = RunSummary(report(failed: 2), manifest: "m.yaml", exitCode: 1, reportPath: "/r.json")
        let variables = HookPlan.environment(.onFailure, summary: summary, manifestPath: "m.yaml")
        #expect(variables["BATCHFETCH_EVENT"] == "on_failure" && variables["BATCHFETCH_EXIT_CODE"] == "1")
        #expect(variables["BATCHFETCH_FAILED"] == "2" && variables["BATCHFETCH_DOWNLOADED"] == "1" && variables["BATCHFETCH_DEFERRED"] == "0")
        #expect(variables["BATCHFETCH_REPORT"] == "/r.json" && variables["BATCHFETCH_MANIFEST"] == "m.yaml")
        let start = HookPlan.environment(.onStart, summary: .starting(manifest: "m.yaml", report: "/r.json", at: Date()), manifestPath: "m.yaml")
        #expect(start["BATCHFETCH_EXIT_CODE"] == nil && start["BATCHFETCH_EVENT"] == "on_start")
    }

    @Test func theManifestGivesTheHooks() throws {
        let text = """
            version: 1
            hooks:
              on_start: [{ping: "https://hc.example/${HC_ID}"}]
              on_failure:
                - {command: [./notify.sh, "${CHANNEL}"], timeout: 10s}
                - {url: "https://chat.example/hook", headers: {Authorization: "Bearer ${TOKEN}"}}
            jobs:
              - {id: a, url: 'https://h/a'}
            """
        let manifest = try ManifestLoader(environment: ["HC_ID": "abc", "CHANNEL": "ops", "TOKEN": "t0k"])
            .load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/srv/batch")
        let start = try #require(manifest.hooks.actions[.onStart]?.first)
        guard case .ping(let ping) = start.kind else { Issue.record("not a ping"); return }
        #expect(ping.resolved == "https://hc.example/abc" && ping.redacted == "https://hc.example/${HC_ID}")
        let failure = manifest.hooks.actions[.onFailure] ?? []
        #expect(failure.map(\.name) == ["command", "url"])
        guard case .command(let words) = failure[0].kind else { Issue.record("not a command"); return }
        #expect(words.map(\.resolved) == ["/srv/batch/notify.sh", "ops"] && failure[0].timeout == 10)
        #expect(failure[1].timeout == Hooks.Action.defaultTimeout)
    }
}
