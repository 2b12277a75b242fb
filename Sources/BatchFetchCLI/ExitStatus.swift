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
    /// The run stopped at its budget (`max_duration`, `max_bytes`) with nothing failed: some
    /// jobs are `deferred`, and the next run continues them.
    case deferred = 5

}

/// How a command ends other than in success: the exit status, and what it says on stderr first.
///
/// Commands throw it and never exit or print their last word themselves: ``ExitStatus/ending(_:)``
/// is the one place an error becomes a message and an exit code (as SwiftPM's
/// `AsyncSwiftCommand.run()` is for its commands), so `--metrics` records the same code the
/// process exits with.
struct CommandFailure: Error {
    let status: ExitStatus
    /// Printed on stderr as written (it names its command or begins `batchfetch: error:`).
    let message: String?

    init(_ status: ExitStatus, _ message: String? = nil) {
        self.status = status
        self.message = message
    }
}

extension ExitStatus {
    /// The process's exit code and stderr message for an error a command threw: a
    /// ``CommandFailure``'s own, argument-parser's usage errors as 2 (Docs/Contracts.md §1: not
    /// its 64), a signal's 128 + N, anything else as argument-parser reports it.
    static func ending(_ error: any Error) -> (code: Int32, message: String) {
        if let failure = error as? CommandFailure { return (failure.status.rawValue, failure.message ?? "") }
        let code = BatchFetchCommand.exitCode(for: error)
        let message = BatchFetchCommand.fullMessage(for: error)
        return (code == .validationFailure ? ExitStatus.invalid.rawValue : code.rawValue, message)
    }

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
            return report.status == .deferred ? .deferred : .jobsFailed
        case .check:
            if (report.summary.drift ?? 0) + (report.summary.missing ?? 0) > 0 { return .drift }
            return (report.summary.unreachable ?? 0) > 0 ? .jobsFailed : nil
        case .verify:
            return report.status == .succeeded ? nil : .drift
        }
    }
}
