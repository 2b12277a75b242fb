@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// A run's report entries kept on disk as jobs finish (``ReportJournal``) and the report written
/// as a stream (``ReportText``): the bytes are exactly those of encoding the whole report.
@Suite struct ReportJournalTests {
    /// Jobs with every shape of entry: errors with attempts, redirects, checksums, a skipped job
    /// with no bytes, a check's mirrors, and strings that need escaping.
    static func jobs() -> [RunReport.Job] {
        var failed = RunReportTests.result("fails", .failed, transferred: 4)
        failed.failure = BatchFetchError(.httpStatus, "HTTP 503 from http://127.0.0.1/a \"quoted\"\n")
        failed.attempts = [AttemptRecord(mirrorIndex: 0, url: "http://127.0.0.1/a", httpStatus: 503, failure: failed.failure, waited: 1.5),
                           AttemptRecord(mirrorIndex: 1, url: "http://[::1]/a?x=1&y=/", httpStatus: nil, failure: failed.failure, waited: 0)]
        var downloaded = RunReportTests.result("dir/ünïcode", .downloaded, size: 10, transferred: 10)
        downloaded.redirects = ["http://127.0.0.1/r1", "http://127.0.0.1/r2"]
        downloaded.checksums = ["sha256": String(repeating: "a", count: 64), "md5": String(repeating: "b", count: 32)]
        downloaded.etag = "\"e-1\""
        var skipped = RunReportTests.result("skipped", .skipped)
        skipped.skippedBecause = "dependency 'fails' failed"
        var checked = JobResult(id: "checked", status: .drift, dest: "c.bin")
        checked.mirrors = []
        return [failed, downloaded, skipped, RunReportTests.result("up", .upToDate, size: 5), checked].map(RunReport.Job.init)
    }

    static func report(_ jobs: ReportJobs) throws -> RunReport {
        let text = "version: 1\njobs:\n  - {id: a, url: \"http://127.0.0.1/a\"}\n"
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        var options = RunOptions()
        options.manifestSHA256 = String(repeating: "0", count: 64)
        options.shard = ShardScope(shard: Shard(index: 1, count: 4)!, manifestJobs: 9)
        return RunReport(command: .run, manifest: manifest, options: options, startDate: Date(), started: .now(),
                         jobs: jobs, interrupted: false)
    }

    static func written(_ report: RunReport) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try report.write(to: directory + "/report.json")
        return try Data(contentsOf: URL(fileURLWithPath: directory + "/report.json"))
    }

    @Test(arguments: [0, 1, 5])
    func aStreamedReportIsByteForByteTheEncodedOne(count: Int) throws {
        let report = try Self.report(ReportJobs(Array(Self.jobs().prefix(count))))
        #expect(try Self.written(report) == StableJSON.encode(report) + Data("\n".utf8))
    }

    /// More entries than one block of the journal's file holds, finished in a shuffled order: on
    /// disk, and on a file where every write fails (`/dev/full`), where they stay in memory.
    @Test(arguments: [false, true])
    func manyEntriesComeBackInReportOrderWrittenOrNot(fullDisk: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let jobs = (0..<600).map { index in
            var result = RunReportTests.result("job-\(index)", index % 7 == 0 ? .failed : .downloaded, size: Int64(index))
            if index % 7 == 0 { result.failure = BatchFetchError(.httpStatus, String(repeating: "m\(index) ", count: 60)) }
            return RunReport.Job(result)
        }
        let file = fullDisk ? JournalFile(descriptor: open("/dev/full", O_RDWR | O_CLOEXEC)) : JournalFile(in: try SafeDirectory.root(directory, create: false))
        var journal = ReportJournal(count: jobs.count, file: file)
        var order = Array(jobs.indices)
        var generator = SeededGenerator(seed: 4)
        order.shuffle(using: &generator)
        for index in order { journal.record(ReportJournal.Encoded(jobs[index]), at: index) }
        #expect(jobs.map { (ReportJournal.Encoded($0).text ?? []).count }.reduce(0, +) > 2 * ReportJournal.blockSize)
        let fromJournal = try Self.report(ReportJobs(journal: journal.finished()))
        #expect(try StableJSON.encode(Array(fromJournal.jobs)) == StableJSON.encode(jobs))
    }

    @Test(arguments: [true, false])
    func aJournalGivesTheJobsInReportOrderWhateverOrderTheyFinishedIn(onDisk: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let jobs = Self.jobs()
        var journal = ReportJournal(count: jobs.count, directory: onDisk ? try SafeDirectory.root(directory, create: false) : nil)
        for index in [3, 0, 4, 2, 1] {
            #expect(!journal.contains(index))
            journal.record(ReportJournal.Encoded(jobs[index]), at: index)
            #expect(journal.contains(index))
        }
        // The unnamed file leaves no name behind in the output directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        let fromJournal = try Self.report(ReportJobs(journal: journal.finished()))
        let inMemory = try Self.report(ReportJobs(jobs))
        #expect(fromJournal.jobs.map(\.id) == jobs.map(\.id))
        #expect(try StableJSON.encode(Array(fromJournal.jobs)) == StableJSON.encode(jobs))
        // Counted as they came: the same summary as counting them all at the end.
        #expect(try StableJSON.encode(journal.summary) == StableJSON.encode(RunReport.summary(of: jobs, command: .run)))
        var withTimesOf = inMemory
        withTimesOf.startedAt = fromJournal.startedAt
        withTimesOf.finishedAt = fromJournal.finishedAt
        withTimesOf.durationSeconds = fromJournal.durationSeconds
        #expect(try Self.written(fromJournal) == Self.written(withTimesOf))
    }

    /// A journal that lists only some jobs keeps only their entries, in report order, and counts
    /// every job.
    @Test(arguments: [RunReport.JobsReported.changed, .failed])
    func aJournalListingSomeJobsCountsThemAll(listing: RunReport.JobsReported) throws {
        let statuses: [JobResult.Status] = [.upToDate, .downloaded, .failed, .upToDate, .skipped, .interrupted]
        let jobs = statuses.enumerated().map { RunReport.Job(RunReportTests.result("j\($0.offset)", $0.element)) }
        var journal = ReportJournal(count: jobs.count, directory: nil)
        for index in jobs.indices.reversed() { journal.record(ReportJournal.Encoded(jobs[index], listing: listing), at: index) }
        let listed = ReportJobs(journal: journal.finished())
        #expect(listed.map(\.id) == (listing == .changed ? ["j1", "j2", "j4", "j5"] : ["j2", "j4", "j5"]))
        #expect(try StableJSON.encode(journal.summary) == StableJSON.encode(RunReport.summary(of: jobs, command: .run)))
    }
}
