import ArgumentParser
import BatchFetchEngine

/// The process exit codes of Docs/Contracts.md §1, so scripts can tell outcomes apart.
public enum ExitStatus: Int32, Sendable {
    /// All jobs succeeded / the manifest is valid.
    case success = 0
    /// One or more jobs failed or were skipped because a dependency failed.
    case jobsFailed = 1
    /// Usage error or invalid manifest.
    case invalid = 2
    /// Drift or lock mismatch.
    case drift = 3
    /// Another run holds the run lock.
    case locked = 4

    var exitCode: ExitCode { ExitCode(rawValue) }
}

extension ExitStatus {
    /// The exit status a finished report calls for (Docs/Contracts.md §1), nil for success:
    /// `run` 3 when content differed from the lockfile on any mirror (even when the last mirror
    /// then failed otherwise, e.g. 404), else 1 unless it succeeded; `check` 3 for drift or a
    /// missing file, 1 for an unreachable mirror; `verify` 3 for anything not ok. Signals (130,
    /// 143) are the caller's: a report does not know how its process was stopped.
    static func of(_ report: RunReport) -> ExitStatus? {
        switch report.command {
        case .run:
            // Only a failed or interrupted job has an error; a run's jobs are read back from its
            // journal, so a successful run reads none.
            guard report.status != .succeeded else { return nil }
            let lockMismatch = report.jobs.contains { job in
                job.error.map { $0.code == .lockMismatch || ($0.attempts ?? []).contains { $0.code == .lockMismatch } } ?? false
            }
            if lockMismatch { return .drift }
            return report.status == .succeeded ? nil : .jobsFailed
        case .check:
            if (report.summary.drift ?? 0) + (report.summary.missing ?? 0) > 0 { return .drift }
            return (report.summary.unreachable ?? 0) > 0 ? .jobsFailed : nil
        case .verify:
            return report.status == .succeeded ? nil : .drift
        }
    }
}
