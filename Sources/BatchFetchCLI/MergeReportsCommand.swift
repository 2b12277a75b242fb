import ArgumentParser
import BatchFetchEngine
import BatchFetchFiles
import Foundation

/// `batchfetch merge-reports`: the reports of a split manifest's shards as one report v1.
struct MergeReportsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge-reports",
        abstract: "Combine the reports of every shard of a split manifest into one report.",
        discussion: HelpText.reflowed("""
            Takes the reports that `run`, `check` or `verify --shard K/N` wrote (one per shard,
            e.g. batchfetch-report.shard-*.json) and writes one report v1 with every job of the
            manifest exactly once (ordered by id), the summary counted again from the jobs and the
            status by the command's precedence. The merged report goes to --report, or to stdout.

            Refused, naming the report (exit 2): a report that is not a shard report, a report of
            another command or another manifest (its sha256 differs), shards of different splits,
            a missing shard, a shard given twice, a job in two reports, or fewer jobs than the
            manifest has.

            Exit status: as the command the reports are of — run: 0 all succeeded, 1 a job failed,
            was skipped or interrupted, 3 lock mismatch; check: 3 drift or missing, 1 unreachable;
            verify: 3 any mismatch — and 2 when the reports do not make one whole.

            Examples:
              batchfetch merge-reports data/batchfetch-report.shard-*.json --report merged.json
              batchfetch merge-reports shard-reports/*.json --junit junit.xml > merged.json
            """)
    )

    @Argument(help: "The shard reports, one per shard.", completion: .file(extensions: ["json"]))
    var reports: [String]

    @Option(help: "Where to write the merged report (default: stdout).", completion: .file())
    var report: String?

    @Option(help: "Write a JUnit XML file with one testcase per job.", completion: .file(extensions: ["xml"]))
    var junit: String?

    func run() throws {
        let loaded = try reports.map { (name: $0, report: try ReportFile.read($0)) }
        let merged = try ReportFile.merged(loaded)
        var written = true
        if let report {
            written = ReportFile.write(merged, to: report)
        } else {
            do {
                FileHandle.standardOutput.write(try StableJSON.encode(merged) + Data("\n".utf8))
            } catch {
                Console.error("batchfetch: error: cannot encode the merged report: \(error)")
                written = false
            }
        }
        if let junit, !ReportFile.writeJUnit(merged, to: junit) { written = false }
        Console.error("merged \(loaded.count) shard reports of \(merged.command.rawValue): \(merged.status.rawValue), "
            + "\(merged.summary.jobs) jobs: \(ReportFile.counts(merged))" + (report.map { "; report: \($0)" } ?? ""))
        if let exit = ExitStatus.of(merged) { throw CommandFailure(exit) }
        if !written { throw CommandFailure(.jobsFailed) }
    }
}
