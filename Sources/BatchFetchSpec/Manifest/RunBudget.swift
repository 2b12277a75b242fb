/// How long a run may take and how much it may fetch (`max_duration`, `max_bytes`, `cutoff`;
/// `--max-duration`, `--max-bytes`, `--cutoff`), and the one rule that says when it is spent.
///
/// A pure value: the runner asks it with the time since the run lock was taken and the bytes
/// fetched so far (from its injected clock and its byte count), so the rule is tested without a
/// clock or a socket (`RunBudgetTests`). What happens then is the cutoff's: `soft` starts no
/// more jobs and lets the running ones finish; `hard` interrupts them too, as SIGTERM does, with
/// their partials kept for the next run. Jobs that did not finish are `deferred` and the run
/// exits 5 (Docs/Contracts.md).
public struct RunBudget: Sendable, Equatable {
    /// What a spent budget does to the jobs already running.
    public enum Cutoff: String, Sendable, CaseIterable {
        case soft, hard
    }

    /// Which budget was spent: a deferred job's `deferred_because`.
    public enum Reason: String, Sendable, Equatable {
        case maxDuration = "max_duration"
        case maxBytes = "max_bytes"
    }

    /// Seconds from the moment the run lock is held.
    public var maxDuration: Double?
    /// Bytes the run's jobs transfer: bodies received, and files upload jobs send.
    public var maxBytes: Int64?
    public var cutoff = Cutoff.soft

    public init(maxDuration: Double? = nil, maxBytes: Int64? = nil, cutoff: Cutoff = .soft) {
        self.maxDuration = maxDuration
        self.maxBytes = maxBytes
        self.cutoff = cutoff
    }

    /// Whether any limit is set.
    public var isSet: Bool { maxDuration != nil || maxBytes != nil }

    /// Which budget is spent after `elapsed` seconds and `bytes` fetched, if any: the duration
    /// once it has passed, the bytes once they reach the limit (so a soft `max_bytes` lets a job
    /// start while the bytes so far are under it). The duration is named first when both are.
    public func spent(elapsed: Double, bytes: Int64) -> Reason? {
        if let maxDuration, elapsed >= maxDuration { return .maxDuration }
        if let maxBytes, bytes >= maxBytes { return .maxBytes }
        return nil
    }

    /// This budget with `other`'s limits where it sets them (the flags win over the manifest).
    public func overridden(by other: RunBudget, cutoffGiven: Bool) -> RunBudget {
        RunBudget(maxDuration: other.maxDuration ?? maxDuration, maxBytes: other.maxBytes ?? maxBytes,
                  cutoff: cutoffGiven ? other.cutoff : cutoff)
    }
}
