import ArgumentParser
import BatchFetchEngine
import BatchFetchFiles
import Foundation

/// `batchfetch report`: a report (of `run`, `check`, `verify` or `merge-reports`) for people.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Show a JSON report for people: as text, as Markdown for a CI job summary, or as one HTML page.",
        discussion: HelpText.reflowed("""
            text: the outcome, totals, failures with their reasons, drift and the slowest jobs.
            markdown: the same as tables, for $GITHUB_STEP_SUMMARY or a GitLab job summary.
            html: one self-contained page (no network needed) with a timeline of the run (each
            job a bar over time, coloured by outcome) and throughput over time.

            Examples:
              batchfetch report data/batchfetch-report.json
              batchfetch report data/batchfetch-report.json --format markdown >> "$GITHUB_STEP_SUMMARY"
              batchfetch report data/batchfetch-report.json --format html -o report.html
            """)
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, markdown, html
    }

    @Argument(help: "A report written by run, check, verify or merge-reports.", completion: .file(extensions: ["json"]))
    var report: String

    @Option(help: "text, markdown or html.", completion: .list(["text", "markdown", "html"]))
    var format: Format = .text

    @Option(name: [.short, .customLong("output")], help: "Write to this file (replaced atomically) instead of stdout.",
            completion: .file())
    var output: String?

    func run() throws {
        let loaded = try ReportFile.read(report)
        let text = switch format {
        case .text: ReportPlainText.render(loaded)
        case .markdown: ReportMarkdown.render(loaded)
        case .html: ReportHTML.render(loaded)
        }
        guard let output else {
            print(text, terminator: "")
            return
        }
        do {
            try SafeDirectory.writeAtomically(path: output, Data(text.utf8))
        } catch {
            throw CommandFailure(.jobsFailed, "batchfetch: error: cannot write \(output): \(error.localizedDescription)")
        }
    }
}
