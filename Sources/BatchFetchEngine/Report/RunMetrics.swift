import BatchFetchFiles
import BatchFetchNetwork
import Foundation
import Prometheus

/// One command's run as Prometheus text for node_exporter's textfile collector (`--metrics
/// PATH`, Docs/Metrics.md): per-run gauges, each with `manifest` and `command` labels, so a cron
/// host's alerts can ask "when did this batch last succeed" without reading a report.
///
/// Why gauges of the last run and not counters: a textfile is rewritten by each run, and the
/// collector serves what the last one wrote; a counter would restart at every run. Labels stay
/// bounded (statuses, verdicts) unless `perJob` asks for a series per job.
///
/// The text comes from swift-prometheus's registry, which escapes label values and writes the
/// `# HELP`/`# TYPE` lines; `promtool check metrics` accepts every file the tests make.
package struct RunMetrics: Sendable {
    package var command: RunReport.Command
    /// The manifest as the command line named it: the `manifest` label.
    package var manifest: String
    package var exitCode: Int32
    /// The run's report; nil when the command failed before it had one (an invalid manifest, a
    /// held run lock): then only the exit code, the times and the last success are written.
    package var report: RunReport?
    /// When the command started and ended, for a run without a report.
    package var started: Date
    package var finished: Date
    /// `batchfetch_last_success_time_seconds` of the file this one replaces (``lastSuccess(in:)``):
    /// kept when this run did not succeed.
    package var previousSuccess: Double?
    /// A series per job (`batchfetch_job_status`, `_bytes`, `_duration_seconds`).
    package var perJob = false

    package init(command: RunReport.Command, manifest: String, exitCode: Int32, report: RunReport?,
                started: Date, finished: Date, previousSuccess: Double?, perJob: Bool = false) {
        (self.command, self.manifest, self.exitCode, self.report) = (command, manifest, exitCode, report)
        (self.started, self.finished, self.previousSuccess, self.perJob) = (started, finished, previousSuccess, perJob)
    }

    /// The whole file's text.
    package func text() -> String {
        let registry = PrometheusCollectorRegistry()
        let labels = [("manifest", manifest), ("command", command.rawValue)]
        func gauge(_ name: String, _ help: String, _ value: Double, _ extra: [(String, String)] = []) {
            registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help),
                               labels: extra + labels).set(value)
        }
        // The command's own clock: the report's times are whole seconds.
        let (start, end) = (started.timeIntervalSince1970, finished.timeIntervalSince1970)
        gauge("batchfetch_exit_code", "Exit code of the last run.", Double(exitCode))
        gauge("batchfetch_run_start_time_seconds", "When the last run started, in seconds since the epoch.", start)
        gauge("batchfetch_run_end_time_seconds", "When the last run ended, in seconds since the epoch.", end)
        gauge("batchfetch_run_duration_seconds", "How long the last run took.",
              report?.durationSeconds ?? finished.timeIntervalSince(started))
        gauge("batchfetch_last_success_time_seconds",
              "When a run last exited 0, in seconds since the epoch (0: never, as far as this file knows).",
              exitCode == 0 ? end : previousSuccess ?? 0)
        guard let report else { return registry.emitToString() }

        gauge("batchfetch_bytes_transferred", "Bytes the last run moved over the network.", Double(report.summary.bytesTransferred))
        // Every status has a series (a zero stays a zero, not a gap). A run's from its summary
        // (which counts every job, also those `--report-jobs` leaves out); a check's or verify's
        // from its jobs (a check's summary counts mirrors).
        let counts = report.command == .run ? StatusCounts(report.summary, command: .run) : StatusCounts(jobs: report.jobs, command: command)
        for entry in counts {
            gauge("batchfetch_jobs", "Jobs of the last run by status.", Double(entry.count), [("status", entry.status.rawValue)])
        }
        if command != .run {
            for entry in counts {
                gauge("batchfetch_drift_jobs", "Jobs of the last check or verify by verdict.",
                      Double(entry.count), [("verdict", entry.status.rawValue)])
            }
        }
        if perJob {
            for job in report.jobs {
                let id = [("job", job.id)]
                gauge("batchfetch_job_status", "1 for each job's status in the last run.", 1, id + [("status", job.status.rawValue)])
                gauge("batchfetch_job_bytes_transferred", "Bytes each job moved in the last run.", Double(job.bytesTransferred ?? 0), id)
                gauge("batchfetch_job_duration_seconds", "How long each job took in the last run.", job.durationSeconds ?? 0, id)
            }
        }
        return registry.emitToString()
    }

    /// The `batchfetch_last_success_time_seconds` value in an earlier file's `text` for this
    /// manifest and command, if it has one: the last success survives the runs that fail.
    package func lastSuccess(in text: String) -> Double? {
        let wanted = ["manifest=\"\(Self.escapedLabelValue(manifest))\"", "command=\"\(command.rawValue)\""]
        for line in text.split(separator: "\n") where line.hasPrefix("batchfetch_last_success_time_seconds{") {
            guard let close = line.lastIndex(of: "}") else { continue }
            let labels = line[..<close]
            guard wanted.allSatisfy({ labels.contains($0) }) else { continue }
            return Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// A label value as the text format writes it (backslash, double quote and line feed escaped).
    static func escapedLabelValue(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
