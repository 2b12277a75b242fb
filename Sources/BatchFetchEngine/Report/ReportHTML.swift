import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// A report as one self-contained HTML page: the totals, a timeline of the run (each job a bar
/// over time, coloured by outcome), throughput over time, and the tables of failures, drift and
/// the slowest jobs.
///
/// Readable without a network: styles and the SVG charts are inline, and a Content-Security-
/// Policy forbids loading anything (a URL in a job is text, never fetched). The only script
/// shows the start time in the reader's time zone. Every string from the report is escaped.
package enum ReportHTML {
    /// Each outcome's colour (bars, legend and badges).
    static let colours: [String: String] = [
        "downloaded": "#2e7d32", "uploaded": "#1565c0", "up_to_date": "#90a4ae", "failed": "#c62828",
        "skipped": "#f9a825", "interrupted": "#6a1b9a", "ok": "#2e7d32", "drift": "#ef6c00", "missing": "#c62828",
        "unreachable": "#6a1b9a",
    ]

    static let chartWidth = 1000.0
    static let labelWidth = 180.0

    package static func render(_ report: RunReport) -> String {
        let digest = ReportDigest(report)
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
            <title>\(escape(digest.title))</title>
            <style>
            body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #212121; max-width: 1100px; }
            h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
            .badge { color: #fff; padding: 2px 8px; border-radius: 4px; }
            table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
            td.n, th.n { text-align: right; } code { font-size: 13px; }
            .legend span { display: inline-block; margin-right: 14px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
            svg text { font: 11px system-ui, sans-serif; fill: #424242; }
            </style>
            </head>
            <body>

            """
        let colour = colours[report.status == .succeeded ? "downloaded" : report.status == .interrupted ? "interrupted" : "failed"]!
        html += "<h1>batchfetch \(escape(report.command.rawValue)) <span class=\"badge\" style=\"background:\(colour)\">"
            + "\(escape(report.status.rawValue))</span></h1>\n"
        html += "<p><code>\(escape(digest.manifest))</code> · started <time id=\"started\" datetime=\"\(escape(digest.startedAt))\">"
            + "\(escape(digest.startedAt))</time> · \(ByteFormat.seconds(digest.durationSeconds)) s · "
            + "\(escape(ByteFormat.bytes(digest.bytesTransferred))) transferred</p>\n"
        html += "<table id=\"totals\"><tr>" + digest.counts.map { "<th class=\"n\">\(escape($0.label))</th>" }.joined()
            + "</tr><tr>" + digest.counts.map { "<td class=\"n\">\($0.count)</td>" }.joined() + "</tr></table>\n"

        if !digest.timeline.isEmpty {
            html += "<h2>Timeline</h2>\n" + legend(Set(digest.timeline.map(\.status))) + timeline(digest)
            if digest.timelineLeftOut > 0 {
                html += "<p>\(digest.timeline.count) of \(digest.timeline.count + digest.timelineLeftOut) jobs shown: "
                    + "the failed ones, then the slowest.</p>\n"
            }
            html += "<h2>Throughput</h2>\n" + throughput(digest.throughput(of: report, buckets: 100), duration: digest.durationSeconds)
        }
        if !digest.failures.isEmpty {
            html += "<h2>Failures (\(digest.failures.count + digest.failuresLeftOut))</h2>\n"
            html += table(["job", "status", "error", "reason"], digest.failures.map { [code($0.id), escape($0.status), $0.code.map(code) ?? "", escape($0.message)] })
        }
        if !digest.drift.isEmpty {
            html += "<h2>Drift (\(digest.drift.count + digest.driftLeftOut))</h2>\n"
            html += table(["job", "verdict", "what differs"], digest.drift.map { [code($0.id), escape($0.status), escape($0.message)] })
        }
        if !digest.slowest.isEmpty {
            html += "<h2>Slowest jobs</h2>\n"
            html += table(["job", "status", "time", "bytes"], digest.slowest.map {
                [code($0.id), escape($0.status), "\(ByteFormat.seconds($0.duration)) s", escape(ByteFormat.bytes($0.bytes))]
            })
        }
        html += """
            <p><small>\(escape(report.tool.name)) \(escape(report.tool.version))</small></p>
            <script>
            const started = document.getElementById("started");
            const when = new Date(started.getAttribute("datetime"));
            if (!isNaN(when)) { started.textContent = when.toLocaleString(); started.title = started.getAttribute("datetime"); }
            </script>
            </body>
            </html>

            """
        return html
    }

    /// Jobs as bars over time, one row each, in start order; each bar's tooltip says what it was.
    private static func timeline(_ digest: ReportDigest) -> String {
        let rowHeight = 16.0, top = 20.0
        let span = max(digest.durationSeconds, digest.timeline.map { $0.start + $0.duration }.max() ?? 0, 0.001)
        let scale = (chartWidth - labelWidth - 10) / span
        let height = top + Double(digest.timeline.count) * rowHeight + 4
        var svg = "<svg id=\"timeline\" width=\"\(Int(chartWidth))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"timeline\">\n"
        for tick in ticks(span) {
            let x = labelWidth + tick * scale
            svg += "<line x1=\"\(format(x))\" y1=\"\(Int(top - 4))\" x2=\"\(format(x))\" y2=\"\(Int(height))\" stroke=\"#eee\"/>"
                + "<text x=\"\(format(x))\" y=\"12\">\(format(tick)) s</text>\n"
        }
        for (row, job) in digest.timeline.enumerated() {
            let y = top + Double(row) * rowHeight
            let width = max(1.5, job.duration * scale)
            svg += "<text x=\"0\" y=\"\(format(y + 11))\">\(escape(String(job.id.prefix(28))))</text>"
                + "<rect class=\"bar \(escape(job.status))\" x=\"\(format(labelWidth + job.start * scale))\" y=\"\(format(y + 2))\" "
                + "width=\"\(format(width))\" height=\"\(Int(rowHeight - 4))\" fill=\"\(colours[job.status] ?? "#757575")\">"
                + "<title>\(escape(job.id)): \(escape(job.status)), from \(format(job.start)) s for \(format(job.duration)) s, "
                + "\(escape(ByteFormat.bytes(job.bytes)))</title></rect>\n"
        }
        return svg + "</svg>\n"
    }

    /// Bytes per second over the run, as an area under a line.
    private static func throughput(_ rates: [Double], duration: Double) -> String {
        let height = 160.0, plot = chartWidth - labelWidth - 10
        let peak = max(rates.max() ?? 0, 1)
        let step = plot / Double(max(1, rates.count))
        var points = "\(format(labelWidth)),\(format(height))"
        for (index, rate) in rates.enumerated() {
            let y = height - rate / peak * (height - 20)
            points += " \(format(labelWidth + Double(index) * step)),\(format(y)) \(format(labelWidth + Double(index + 1) * step)),\(format(y))"
        }
        points += " \(format(labelWidth + plot)),\(format(height))"
        return "<svg id=\"throughput\" width=\"\(Int(chartWidth))\" height=\"\(Int(height + 16))\" role=\"img\" aria-label=\"throughput\">\n"
            + "<text x=\"0\" y=\"24\">\(escape(ByteFormat.bytes(Int64(peak))))/s</text><text x=\"0\" y=\"\(Int(height))\">0</text>\n"
            + "<polygon points=\"\(points)\" fill=\"#90caf9\" stroke=\"#1565c0\"/>\n"
            + "<text x=\"\(format(labelWidth + plot - 40))\" y=\"\(Int(height + 14))\">\(ByteFormat.seconds(duration)) s</text>\n</svg>\n"
    }

    private static func legend(_ statuses: Set<String>) -> String {
        "<p class=\"legend\">" + statuses.sorted().map {
            "<span><i style=\"background:\(colours[$0] ?? "#757575")\"></i>\(escape($0))</span>"
        }.joined() + "</p>\n"
    }

    private static func table(_ head: [String], _ rows: [[String]]) -> String {
        "<table><tr>" + head.map { "<th>\($0)</th>" }.joined() + "</tr>\n"
            + rows.map { "<tr>" + $0.map { "<td>\($0)</td>" }.joined() + "</tr>\n" }.joined() + "</table>\n"
    }

    /// About five round ticks from 0 to `span` seconds.
    static func ticks(_ span: Double) -> [Double] {
        let raw = span / 5
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        return stride(from: 0, through: span, by: step).map { $0 }
    }

    private static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    private static func code(_ text: String) -> String {
        "<code>\(escape(text))</code>"
    }

    /// Text for HTML content and attribute values (the JUnit file's escaping).
    static func escape(_ text: String) -> String {
        RunReport.escape(text)
    }
}
