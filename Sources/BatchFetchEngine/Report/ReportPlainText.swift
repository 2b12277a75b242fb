import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// A report as plain text for a terminal or a mail body: the outcome, the totals, failures with
/// their reasons, drift, and the slowest jobs (``ReportDigest``).
package enum ReportPlainText {
    package static func render(_ report: RunReport) -> String {
        let digest = ReportDigest(report)
        var lines = [digest.title,
                     "manifest \(digest.manifest), started \(digest.startedAt), \(ByteFormat.seconds(digest.durationSeconds)) s, "
                        + "\(ByteFormat.bytes(digest.bytesTransferred)) transferred"]
        let (jobs, rest) = (digest.counts[0], digest.counts.dropFirst())
        lines.append("\(jobs.count) jobs" + (rest.isEmpty ? "" : ": " + rest.map { "\($0.count) \($0.label)" }.joined(separator: ", ")))
        func section(_ title: String, _ problems: [ReportDigest.Problem], leftOut: Int) {
            guard !problems.isEmpty else { return }
            lines += ["", "\(title) (\(problems.count + leftOut)):"]
            lines += problems.map { "  \($0.id)  \($0.status)" + ($0.code.map { "  \($0): " } ?? "  ") + oneLine($0.message) }
            if leftOut > 0 { lines.append("  … and \(leftOut) more in the report") }
        }
        section("failures", digest.failures, leftOut: digest.failuresLeftOut)
        section("drift", digest.drift, leftOut: digest.driftLeftOut)
        if !digest.slowest.isEmpty {
            lines += ["", "slowest:"]
            lines += digest.slowest.map { "  \($0.id)  \($0.status)  \(ByteFormat.seconds($0.duration)) s  \(ByteFormat.bytes($0.bytes))" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A message on one line (a server's text may hold line breaks).
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
