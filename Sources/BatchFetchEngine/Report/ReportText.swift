import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// A report's text written as a stream, byte for byte what ``StableJSON/encode(_:)`` makes of
/// the whole report: the report without its jobs, with each job's own encoding, indented to its
/// place, put in between. The whole report is never one value in memory (`JSONEncoder` needs
/// several times the 10 MB text of a 20,000-job report to encode it at once).
enum ReportText {
    /// The top-level `jobs` key with an empty array, as the pretty encoder prints it.
    private static let emptyJobs = Array("\n  \"jobs\" : [\n\n  ]".utf8)
    /// Where the first job goes in the text of `emptyJobs`: after `[`.
    private static let jobsOpening = Array("\n  \"jobs\" : [".utf8).count

    /// Writes `report` and a final newline.
    static func write(_ report: RunReport, to writer: inout FileWriter) throws(BatchFetchError) {
        do {
            var header = report
            header.jobs = []
            let text = Array(try StableJSON.encode(header))
            guard let range = text.firstRange(of: emptyJobs) else {
                throw BatchFetchError(.ioError, "the report's text has no jobs array")  // the encoder changed its style
            }
            try writer.write(text[..<(range.lowerBound + jobsOpening)])
            let encoder = StableJSON.prettyEncoder()
            for position in report.jobs.indices {
                try writer.write(position == 0 ? "\n" : ",\n")
                try writer.write(try report.jobs.reportText(at: position, encoder: encoder))
            }
            try writer.write(report.jobs.isEmpty ? "\n\n  ]" : "\n  ]")
            try writer.write(text[range.upperBound...])
            try writer.write("\n")
        } catch let failure as BatchFetchError {
            throw failure
        } catch {
            throw BatchFetchError(.ioError, "cannot encode the report: \(error)")
        }
    }

    /// One job as the report prints it: its pretty encoding as an element of `jobs` (written
    /// directly by ``JobEntryText`` when it has no nested values).
    static func entry(_ job: RunReport.Job, encoder: JSONEncoder) throws -> [UInt8] {
        try JobEntryText.entry(job) ?? StableJSON.indented(try encoder.encode(job), depth: 2, indentFirstLine: true)
    }
}
