import BatchFetchFiles
import BatchFetchSpec

/// Every decision of hooks, as values (Docs/Hooks.md): which events a run's end fires, where a
/// ping goes for each, whether a URL hook's failed try is tried again and after how long, and
/// the environment a command gets. ``HookRunner`` only executes them; `HookPlanTests` holds
/// them without a socket, a process or a clock.
package enum HookPlan {
    /// The events a run that exits `exitCode` fires, in order: `on_success` for 0, nothing but
    /// `on_finish` for 5 (stopped at its budget: not a failure, not a success), `on_failure` for
    /// every other code that reaches the hooks (1, 3, 130, 143).
    package static func closingEvents(exitCode: Int32) -> [Hooks.Event] {
        switch exitCode {
        case 0: [.onSuccess, .onFinish]
        case 5: [.onFinish]
        default: [.onFailure, .onFinish]
        }
    }

    /// Where a `ping` action goes for `event`, healthchecks.io's convention: `URL/start`, `URL`,
    /// `URL/fail`, and for `on_finish` `URL/EXIT_CODE` (its exit-status form). The query, if
    /// any, stays at the end.
    package static func pingURL(_ base: String, event: Hooks.Event, exitCode: Int32?) -> String {
        let suffix: String
        switch event {
        case .onStart: suffix = "/start"
        case .onSuccess: suffix = ""
        case .onFailure: suffix = "/fail"
        case .onFinish: suffix = "/\(exitCode ?? 0)"
        }
        let (path, query) = base.firstIndex(of: "?").map { (String(base[..<$0]), String(base[$0...])) } ?? (base, "")
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        return trimmed + suffix + query
    }

    /// Waits before the second and third try of a URL hook.
    package static let retryDelays = [1.0, 2.0]

    /// After try `attempt` (1-based) answered `status` or failed with `failure`: the seconds to
    /// wait before trying again, or nil to stop — success, an answer no retry changes (4xx but
    /// 429), or the tries used up. Connection failures, timeouts, 429 and 5xx are retried.
    package static func retry(after attempt: Int, status: Int?, failure: BatchFetchError?) -> Double? {
        guard attempt >= 1, attempt <= retryDelays.count else { return nil }
        let retryable: Bool
        if let status {
            retryable = status == 429 || (500...599).contains(status)
        } else {
            retryable = failure.map { [.connection, .timeout].contains($0.code) } ?? false
        }
        return retryable ? retryDelays[attempt - 1] : nil
    }

    /// A command's `BATCHFETCH_*` variables for `event` (Docs/Hooks.md lists them); the result
    /// fields are absent for `on_start`.
    package static func environment(_ event: Hooks.Event, summary: RunSummary, manifestPath: String) -> [String: String] {
        var variables = [
            "BATCHFETCH_EVENT": event.rawValue,
            "BATCHFETCH_MANIFEST": manifestPath,
            "BATCHFETCH_REPORT": summary.report,
        ]
        if let exitCode = summary.exitCode { variables["BATCHFETCH_EXIT_CODE"] = String(exitCode) }
        if let counts = summary.counts {
            for (variable, status) in [("DOWNLOADED", "downloaded"), ("UP_TO_DATE", "up_to_date"), ("FAILED", "failed"),
                                       ("SKIPPED", "skipped"), ("DEFERRED", "deferred")] {
                variables["BATCHFETCH_" + variable] = String(counts[status] ?? 0)
            }
        }
        if let bytes = summary.bytesTransferred { variables["BATCHFETCH_BYTES"] = String(bytes) }
        return variables
    }
}

/// What one hook action did: an entry of the report's `hooks`.
public struct HookRecord: Codable, Sendable, Equatable {
    /// `on_start`, `on_success`, `on_failure` or `on_finish`.
    public var event: String
    /// `command`, `url` or `ping`.
    public var action: String
    public var ok: Bool
    /// The last HTTP status a URL or ping action got.
    public var status: Int?
    /// The exit code of a command.
    public var exitCode: Int32?
    /// Why it did not succeed (redacted).
    public var error: String?

    enum CodingKeys: String, CodingKey {
        case event, action, ok, status, exitCode = "exit_code", error
    }
}
