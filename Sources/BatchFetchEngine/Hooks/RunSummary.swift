import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// The run's summary as hooks send it (Docs/Hooks.md): a `POST` body for `url` actions, the
/// text of a `ping`, the `BATCHFETCH_*` environment of a `command`. `on_start`'s has no result
/// fields (the run has none yet).
package struct RunSummary: Encodable, Sendable, Equatable {
    package struct FailedJob: Encodable, Sendable, Equatable {
        package var id: String
        package var code: String
        package var message: String
    }

    package var version = 1
    package var command = "run"
    /// The manifest's path as given on the command line.
    package var manifest: String
    package var status: String?
    package var exitCode: Int32?
    package var startedAt: String?
    package var finishedAt: String?
    package var durationSeconds: Double?
    /// Jobs by status, every status of a run.
    package var counts: [String: Int]?
    package var bytesTransferred: Int64?
    /// Failed and interrupted jobs with their error, at most ``failedLimit``.
    package var failed: [FailedJob]?
    /// Where the report is.
    package var report: String

    /// A run with a million failed jobs still sends a summary a chat accepts.
    package static let failedLimit = 100

    enum CodingKeys: String, CodingKey {
        case version, command, manifest, status, exitCode = "exit_code", startedAt = "started_at", finishedAt = "finished_at"
        case durationSeconds = "duration_seconds", counts, bytesTransferred = "bytes_transferred", failed, report
    }

    /// The summary `on_start` sends.
    package static func starting(manifest: String, report: String, at date: Date) -> RunSummary {
        RunSummary(manifest: manifest, startedAt: RunReport.timestamp(date), report: report)
    }

    /// The summary of a finished run that exits `exitCode`.
    package init(_ report: RunReport, manifest: String, exitCode: Int32, reportPath: String) {
        self.manifest = manifest
        self.report = reportPath
        status = exitCode == 130 || exitCode == 143 ? RunReport.Status.interrupted.rawValue : report.status.rawValue
        self.exitCode = exitCode
        startedAt = report.startedAt
        finishedAt = report.finishedAt
        durationSeconds = report.durationSeconds
        counts = Dictionary(uniqueKeysWithValues: StatusCounts(report.summary, command: .run).map { ($0.status.rawValue, $0.count) })
        bytesTransferred = report.summary.bytesTransferred
        failed = Array(report.jobs.lazy.filter { $0.error != nil }.prefix(Self.failedLimit).map { job in
            FailedJob(id: job.id, code: job.error!.code.rawValue, message: job.error!.message)
        })
    }

    private init(manifest: String, startedAt: String, report: String) {
        self.manifest = manifest
        self.startedAt = startedAt
        self.report = report
    }

    /// The summary as JSON, keys sorted.
    package var json: Data {
        (try? StableJSON.encode(self)) ?? Data()
    }

    /// The summary as text for a ping body, at most ``textLimit`` bytes (healthchecks keeps the
    /// first 10 KB of a ping's body).
    package var text: String {
        var lines = ["batchfetch \(command) \(manifest): \(status ?? "started")" + (exitCode.map { " (exit \($0))" } ?? "")]
        if let counts {
            let shown = StatusCounts.statuses(of: .run).compactMap { status -> String? in
                let count = counts[status.rawValue] ?? 0
                return count > 0 || StatusCounts.shownAtZero(status) ? "\(count) \(status.rawValue.replacingOccurrences(of: "_", with: " "))" : nil
            }
            lines.append(shown.joined(separator: ", ") + "; \(ByteFormat.bytes(bytesTransferred ?? 0)) transferred"
                + (durationSeconds.map { " in \(ByteFormat.seconds($0))s" } ?? ""))
        }
        for job in failed ?? [] { lines.append("failed \(job.id): \(job.code): \(job.message)") }
        lines.append("report: \(report)")
        return Self.truncated(lines.joined(separator: "\n") + "\n", to: Self.textLimit)
    }

    package static let textLimit = 10_000

    /// `text` cut to at most `limit` bytes of UTF-8, at a character's end.
    static func truncated(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= limit else { break }
            result.append(character)
            bytes += size
        }
        return result
    }
}
