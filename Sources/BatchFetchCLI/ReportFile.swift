import BatchFetchEngine
import BatchFetchFiles
import Foundation

/// Reading, merging and writing report files for the commands, with their errors as people
/// read them and the exit codes of Docs/Contracts.md §1.
enum ReportFile {
    /// Writes the report; says why not on stderr and returns false when it cannot.
    @discardableResult
    static func write(_ report: RunReport, to path: String) -> Bool {
        do {
            try report.write(to: path)
            return true
        } catch {
            Console.error("batchfetch: error: cannot write report \(path): \(error.localizedDescription)")
            return false
        }
    }

    /// Checks before any work that `--report PATH` can be written (its directory exists or can be
    /// made, and takes a new file): a run of hours must not end without its report.
    /// A report written by batchfetch, or an error naming the file and what is wrong in it (exit 2).
    static func read(_ path: String, as role: String = "") throws -> RunReport {
        do {
            return try JSONDecoder().decode(RunReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CommandFailure(.invalid, "batchfetch: error: \(role)\(path) is not a readable batchfetch report: \(describe(error))")
        }
    }

    /// Reports that make one whole: ``ReportMerge/merge(_:)``, or each problem printed (exit 2).
    static func merged(_ reports: [(name: String, report: RunReport)], as role: String = "") throws -> RunReport {
        switch ReportMerge.merge(reports) {
        case .success(let report):
            return report
        case .failure(let problems):
            for problem in problems.messages { Console.error("batchfetch: error: \(role)\(problem)") }
            throw CommandFailure(.invalid)
        }
    }

    /// A decoding error as a person can act on it: what is wrong, and where in the JSON.
    private static func describe(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.isEmpty ? "the top" : context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "'\(key.stringValue)' is missing at \(path(context))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.dataCorrupted(let context):
            return "\(context.debugDescription) at \(path(context))"
        default:
            return error.localizedDescription
        }
    }

    /// Writes the report's JUnit XML; says why not on stderr and returns false when it cannot.
    static func writeJUnit(_ report: RunReport, to path: String) -> Bool {
        do {
            try SafeDirectory.writeAtomically(path: path, Data(report.junitXML().utf8))
            return true
        } catch {
            Console.error("batchfetch: error: cannot write JUnit XML \(path): \(error.localizedDescription)")
            return false
        }
    }

    /// The report's counts as the summary lines print them: jobs by status for `run`, verdicts
    /// for `check` and `verify`.
    static func counts(_ report: RunReport) -> String {
        StatusCounts(report.summary, command: report.command).filter { $0.count > 0 || $0.shownAtZero }
            .map { "\($0.count) \($0.label)" }.joined(separator: ", ")
    }

    static func checkWritable(_ path: String, option: String = "--report") throws {
        do {
            let probe = path + ".batchfetch-probe-\(getpid())"
            try SafeDirectory.writeAtomically(path: probe, Data())
            unlink(probe)
        } catch {
            throw CommandFailure(.invalid, "batchfetch: error: \(option) \(path) cannot be written: \(error.localizedDescription)")
        }
    }
}
