import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// The jobs of a report, in report order: an array, or the journal a run wrote them to as they
/// finished (``ReportJournal``), read back one job at a time. A run's report therefore holds a
/// few bytes per job in memory instead of every job's entry, whatever the size of the manifest.
public struct ReportJobs: RandomAccessCollection, Sendable, ExpressibleByArrayLiteral {
    private enum Storage: Sendable {
        case array([RunReport.Job])
        case journal(ReportJournal.Entries)
    }

    private let storage: Storage

    public init(_ jobs: [RunReport.Job]) {
        storage = .array(jobs)
    }

    public init(arrayLiteral jobs: RunReport.Job...) {
        storage = .array(jobs)
    }

    init(journal: ReportJournal.Entries) {
        storage = .journal(journal)
    }

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        switch storage {
        case .array(let jobs): jobs.count
        case .journal(let entries): entries.count
        }
    }

    /// The job at `position`; from a journal it is read and decoded anew each time.
    public subscript(position: Int) -> RunReport.Job {
        switch storage {
        case .array(let jobs): jobs[position]
        case .journal(let entries): entries.job(at: position)
        }
    }

    /// The text of the job at `position` exactly as the report prints it inside `jobs`
    /// (``ReportText``): a journal's bytes as they are, an array's job encoded now.
    func reportText(at position: Int, encoder: JSONEncoder) throws -> [UInt8] {
        switch storage {
        case .array(let jobs): try ReportText.entry(jobs[position], encoder: encoder)
        case .journal(let entries): try entries.text(at: position)
        }
    }
}

extension ReportJobs: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try [RunReport.Job](from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for job in self { try container.encode(job) }
    }
}
