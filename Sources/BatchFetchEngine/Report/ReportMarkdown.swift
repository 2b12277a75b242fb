import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// A report as Markdown for a CI job's summary (`$GITHUB_STEP_SUMMARY`, GitLab's job
/// summaries): the outcome in the heading, a table of totals, then failures with their reasons,
/// drift, and the slowest jobs. GitHub-flavoured tables; every cell escaped, so a job id or an
/// error message cannot break the table or inject markup.
package enum ReportMarkdown {
    package static func render(_ report: RunReport) -> String {
        let digest = ReportDigest(report)
        let mark = report.status == .succeeded ? "✅" : report.status == .interrupted ? "⏹️" : "❌"
        var lines = ["## \(mark) \(cell(digest.title))", ""]
        lines.append("`\(code(digest.manifest))` · started \(digest.startedAt) · \(ByteFormat.seconds(digest.durationSeconds) + " s") · "
            + "\(ByteFormat.bytes(digest.bytesTransferred)) transferred")
        lines.append("")
        lines.append("| " + digest.counts.map { cell($0.label) }.joined(separator: " | ") + " |")
        lines.append("|" + String(repeating: "---:|", count: digest.counts.count))
        lines.append("| " + digest.counts.map { "\($0.count)" }.joined(separator: " | ") + " |")

        if !digest.failures.isEmpty {
            lines += ["", "### Failures (\(digest.failures.count + digest.failuresLeftOut))", "",
                      "| job | status | error | reason |", "|---|---|---|---|"]
            lines += digest.failures.map { "| `\(code($0.id))` | \($0.status) | \($0.code.map { "`\($0)`" } ?? "") | \(cell($0.message)) |" }
            if digest.failuresLeftOut > 0 { lines += ["", "… and \(digest.failuresLeftOut) more in the report."] }
        }
        if !digest.drift.isEmpty {
            lines += ["", "### Drift (\(digest.drift.count + digest.driftLeftOut))", "",
                      "| job | verdict | what differs |", "|---|---|---|"]
            lines += digest.drift.map { "| `\(code($0.id))` | \($0.status) | \(cell($0.message)) |" }
            if digest.driftLeftOut > 0 { lines += ["", "… and \(digest.driftLeftOut) more in the report."] }
        }
        if !digest.slowest.isEmpty {
            lines += ["", "### Slowest jobs", "", "| job | status | time | bytes | rate |", "|---|---|---:|---:|---:|"]
            lines += digest.slowest.map { span in
                let rate = span.duration > 0 ? Int64(Double(span.bytes) / span.duration) : 0
                return "| `\(code(span.id))` | \(span.status) | \(ByteFormat.seconds(span.duration) + " s") | "
                    + "\(ByteFormat.bytes(span.bytes)) | \(ByteFormat.bytes(rate))/s |"
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text for a table cell: pipes and backslashes escaped, markup characters neutralised, one line.
    static func cell(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "|", "\\", "`", "*", "_", "[", "]", "<", ">", "#", "!", "~": out += "\\\(character)"
            case "\n", "\r", "\t": out += " "
            default: out.append(character)
            }
        }
        return out
    }

    /// Text inside a code span: a backtick would end it and a pipe the cell.
    static func code(_ text: String) -> String {
        text.replacingOccurrences(of: "`", with: "'").replacingOccurrences(of: "|", with: "\\|")
            .replacingOccurrences(of: "\n", with: " ")
    }
}
