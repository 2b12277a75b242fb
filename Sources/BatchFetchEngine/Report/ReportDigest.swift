import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// What a person wants first from a report, computed once for every format of `batchfetch
/// report` (text, Markdown, HTML): the totals, what went wrong and why, drift, the slowest jobs,
/// and the jobs' places in time.
///
/// Lists are bounded (``limit``): a million-job report gives its first failures and its slowest
/// jobs, not a million rows, and says how many it left out.
package struct ReportDigest: Sendable {
    /// One job that did not do what it was for, or a mirror or file that differs.
    package struct Problem: Sendable, Equatable {
        package var id: String
        package var status: String
        /// The error code, or the verdict's field (`sha256`, `size`).
        package var code: String?
        package var message: String
    }

    /// One job on the run's timeline.
    package struct Span: Sendable, Equatable {
        package var id: String
        package var status: String
        package var start: Double
        package var duration: Double
        package var bytes: Int64
    }

    package var title: String
    package var status: RunReport.Status
    package var manifest: String
    package var startedAt: String
    package var durationSeconds: Double
    package var bytesTransferred: Int64
    /// Count per status, in the report's order, zeros left out; `jobs` first.
    package var counts: [(label: String, count: Int)]
    /// Jobs that failed, were skipped or interrupted (`run`).
    package var failures: [Problem]
    package var failuresLeftOut: Int
    /// Jobs whose mirrors (`check`) or files (`verify`) are not ok.
    package var drift: [Problem]
    package var driftLeftOut: Int
    /// The slowest jobs that did something, slowest first.
    package var slowest: [Span]
    /// Jobs with a start time (`run`), in start order; at most ``timelineLimit`` of them, the
    /// problems first, then the slowest.
    package var timeline: [Span]
    package var timelineLeftOut: Int

    package static let limit = 50
    package static let slowestCount = 10
    package static let timelineLimit = 400

    package init(_ report: RunReport) {
        title = "batchfetch \(report.command.rawValue): \(report.status.rawValue)"
        status = report.status
        manifest = report.manifest.path
        startedAt = report.startedAt
        durationSeconds = report.durationSeconds
        bytesTransferred = report.summary.bytesTransferred
        counts = Self.counts(report)

        var failures: [Problem] = [], drift: [Problem] = []
        var failureCount = 0, driftCount = 0
        var spans: [Span] = [], timed: [Span] = []
        for job in report.jobs {
            switch job.status {
            case .failed, .interrupted, .skipped:
                failureCount += 1
                if failures.count < Self.limit {
                    failures.append(Problem(id: job.id, status: job.status.rawValue, code: job.error?.code.rawValue,
                                            message: job.error?.message ?? job.skippedBecause ?? ""))
                }
            case .drift, .missing, .unreachable:
                driftCount += 1
                if drift.count < Self.limit { drift.append(Self.driftProblem(job)) }
            default:
                break
            }
            if let duration = job.durationSeconds {
                let span = Span(id: job.id, status: job.status.rawValue, start: job.startedSeconds ?? 0, duration: duration,
                                bytes: job.bytesTransferred ?? 0)
                spans.append(span)
                if job.startedSeconds != nil { timed.append(span) }
            }
        }
        (self.failures, failuresLeftOut) = (failures, failureCount - failures.count)
        (self.drift, driftLeftOut) = (drift, driftCount - drift.count)
        // Jobs that did something: an up-to-date job's time is a stat, not worth a row.
        let worked: Set<String> = ["downloaded", "uploaded", "failed", "interrupted"]
        slowest = Array(spans.filter { worked.contains($0.status) && $0.duration > 0 }.sorted { $0.duration > $1.duration }
            .prefix(Self.slowestCount))

        var shown = timed
        if timed.count > Self.timelineLimit {
            let isProblem: (Span) -> Bool = { ["failed", "interrupted"].contains($0.status) }
            let bySlowness = timed.sorted { $0.duration > $1.duration }
            shown = Array((bySlowness.filter(isProblem) + bySlowness.filter { !isProblem($0) }).prefix(Self.timelineLimit))
        }
        timeline = shown.sorted { ($0.start, $0.id) < ($1.start, $1.id) }
        timelineLeftOut = timed.count - shown.count
    }

    /// A check's or verify's problem: the first mirror that is not ok, with what differed.
    private static func driftProblem(_ job: RunReport.Job) -> Problem {
        if let mirror = job.mirrors?.first(where: { $0.status != .ok }) {
            let what = mirror.differences.map { $0.map { "\($0.field): expected \($0.expected), got \($0.actual)" }.joined(separator: "; ") }
                ?? mirror.message ?? mirror.httpStatus.map { "HTTP \($0)" } ?? ""
            return Problem(id: job.id, status: job.status.rawValue, code: mirror.differences?.first?.field,
                           message: "[\(mirror.mirrorIndex)] \(mirror.url): \(what)")
        }
        return Problem(id: job.id, status: job.status.rawValue, code: job.error?.code.rawValue,
                       message: job.error?.message ?? (job.status == .missing ? "no file at \(job.dest)" : ""))
    }

    private static func counts(_ report: RunReport) -> [(label: String, count: Int)] {
        var counts: [(label: String, count: Int)] = [("jobs", report.summary.jobs)]
        for entry in StatusCounts(report.summary, command: report.command) where entry.count > 0 {
            counts.append((entry.label, entry.count))
            // How many of those up to date or downloaded came from the cache: not a status.
            if entry.status == .run(.upToDate), let cached = report.summary.fromCache, cached > 0 {
                counts.append(("from the cache", cached))
            }
        }
        return counts
    }

    /// Bytes per second over the run, in `buckets` equal slices of its duration: each job's
    /// bytes spread evenly over its span (the report has no finer record).
    package func throughput(of report: RunReport, buckets: Int) -> [Double] {
        let total = max(durationSeconds, 0.001)
        let width = total / Double(buckets)
        var bytes = [Double](repeating: 0, count: buckets)
        for job in report.jobs {
            guard let start = job.startedSeconds, let duration = job.durationSeconds, let moved = job.bytesTransferred,
                  moved > 0 else { continue }
            let end = min(total, start + max(duration, 0.001))
            let rate = Double(moved) / max(end - start, 0.001)
            var bucket = min(buckets - 1, Int(start / width))
            while bucket < buckets, Double(bucket) * width < end {
                let overlap = min(end, Double(bucket + 1) * width) - max(start, Double(bucket) * width)
                if overlap > 0 { bytes[bucket] += rate * overlap }
                bucket += 1
            }
        }
        return bytes.map { $0 / width }
    }
}
