/// How many of a report's jobs (a run's) or verdicts (check's per mirror, verify's per job) have
/// each status, every status of the command in one fixed order. The one owner of that list and
/// order: the summary line, `batchfetch report`'s digest and the metrics iterate it, so a status
/// added to the report cannot be missing from one of them.
package struct StatusCounts: Sendable, Sequence {
    package struct Entry: Sendable, Equatable {
        package let status: JobResult.Status
        package let count: Int
        /// Whether the summary line shows it at zero (a run's uploads, interruptions and
        /// deferrals are shown only when there were some).
        package let shownAtZero: Bool

        /// The status as people read it (`up to date`).
        package var label: String { status.rawValue.replacingOccurrences(of: "_", with: " ") }
    }

    package let entries: [Entry]

    /// Every status a report of `command` can count, in order.
    package static func statuses(of command: RunReport.Command) -> [JobResult.Status] {
        switch command {
        case .run: JobResult.Outcome.allCases.map(JobResult.Status.run)
        case .check, .verify: MirrorVerdict.Status.allCases.map(JobResult.Status.verdict)
        }
    }

    /// The counts a summary holds: a run's jobs by outcome (every job, also those
    /// `--report-jobs` leaves out of the list), a check's verdicts per mirror, a verify's per job.
    package init(_ summary: RunReport.Summary, command: RunReport.Command) {
        entries = Self.statuses(of: command).map { status in
            let count: Int
            switch status {
            case .run(.downloaded): count = summary.downloaded
            case .run(.uploaded): count = summary.uploaded ?? 0
            case .run(.upToDate): count = summary.upToDate
            case .run(.failed): count = summary.failed
            case .run(.skipped): count = summary.skipped
            case .run(.interrupted): count = summary.interrupted
            case .run(.deferred): count = summary.deferred ?? 0
            case .verdict(.ok): count = summary.ok ?? 0
            case .verdict(.drift): count = summary.drift ?? 0
            case .verdict(.missing): count = summary.missing ?? 0
            case .verdict(.unreachable): count = summary.unreachable ?? 0
            }
            return Entry(status: status, count: count, shownAtZero: Self.shownAtZero(status))
        }
    }

    /// Whether a summary shows `status` when no job has it: a run's uploads, interruptions and
    /// deferrals only when there were some.
    package static func shownAtZero(_ status: JobResult.Status) -> Bool {
        ![.run(.uploaded), .run(.interrupted), .run(.deferred)].contains(status)
    }

    /// The jobs of a report by their own status (a check's job has its most serious mirror's).
    package init<Jobs: Sequence<RunReport.Job>>(jobs: Jobs, command: RunReport.Command) {
        var counted: [JobResult.Status: Int] = [:]
        for job in jobs { counted[job.status, default: 0] += 1 }
        entries = Self.statuses(of: command).map { Entry(status: $0, count: counted[$0] ?? 0, shownAtZero: true) }
    }

    package func makeIterator() -> IndexingIterator<[Entry]> {
        entries.makeIterator()
    }

    /// The count of one status.
    package subscript(status: JobResult.Status) -> Int {
        entries.first { $0.status == status }?.count ?? 0
    }
}
