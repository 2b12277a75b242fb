import ArgumentParser
import BatchFetchEngine
import BatchFetchFiles
import Foundation

/// `--metrics PATH` (and `--metrics-per-job`) of `run`, `check` and `verify`: the run as
/// Prometheus text for node_exporter's textfile collector (``RunMetrics``, Docs/Metrics.md).
///
/// Written however the command ends — success, failed jobs, drift, an interrupt, or an error
/// before any report (an invalid manifest, a held run lock) — because a cron host's alert on
/// `batchfetch_exit_code` or a stale `batchfetch_last_success_time_seconds` must see the runs
/// that went wrong most of all.
struct MetricsOption: ParsableArguments {
    @Option(help: ArgumentHelp("Write the run's metrics in Prometheus text format to this file (replaced atomically; "
                + "for node_exporter's textfile collector, name it *.prom).", valueName: "path"),
            completion: .file(extensions: ["prom"]))
    var metrics: String?

    @Flag(help: "With --metrics, also a series per job (status, bytes, duration): one per job, so only for small manifests.")
    var metricsPerJob = false

    /// Runs a command's work, which hands its report over through `report` once it has one, then
    /// writes the metrics for how it ended (its exit status, or 0) and passes any error on;
    /// unless `skip`.
    func recording(_ command: RunReport.Command, manifest: String, skip: Bool = false,
                   _ work: (_ report: inout RunReport?) async throws -> Void) async throws {
        guard let metrics, !skip else {
            var ignored: RunReport?
            return try await work(&ignored)
        }
        try ReportFile.checkWritable(metrics, option: "--metrics")
        let started = Date()
        var report: RunReport?
        do {
            try await work(&report)
        } catch {
            write(metrics, command: command, manifest: manifest, report: report, started: started,
                  exitCode: ExitStatus.ending(error).code)
            throw error
        }
        // As for the report: a run whose metrics are missing did not do its whole job.
        guard write(metrics, command: command, manifest: manifest, report: report, started: started, exitCode: 0) else {
            throw CommandFailure(.jobsFailed)
        }
    }

    /// Writes the file; says why not on stderr and returns false when it cannot.
    @discardableResult
    private func write(_ path: String, command: RunReport.Command, manifest: String, report: RunReport?,
                       started: Date, exitCode: Int32) -> Bool {
        var metrics = RunMetrics(command: command, manifest: manifest, exitCode: exitCode, report: report,
                                 started: started, finished: Date(), previousSuccess: nil, perJob: metricsPerJob)
        if let earlier = try? String(contentsOfFile: path, encoding: .utf8) {
            metrics.previousSuccess = metrics.lastSuccess(in: earlier)
        }
        do {
            try SafeDirectory.writeAtomically(path: path, Data(metrics.text().utf8))
            return true
        } catch {
            Console.error("batchfetch: error: cannot write metrics \(path): \(error.localizedDescription)")
            return false
        }
    }
}
