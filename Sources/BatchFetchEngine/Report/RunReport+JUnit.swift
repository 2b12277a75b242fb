import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

extension RunReport {
    /// The run as JUnit XML (`run --junit`), for CI systems that show test results: one
    /// testcase per job; failed and interrupted jobs carry a `<failure>` with the error code and
    /// message, skipped ones a `<skipped>` with the reason, deferred ones a `<skipped>` naming
    /// the budget (they did not fail; the next run continues them). A report that lists only some jobs
    /// (`--report-jobs`) has a testcase for each of those, and `tests` counts them: CI viewers
    /// count the testcases they show.
    package func junitXML() -> String {
        let failures = summary.failed + summary.interrupted
        let tests = jobsReported == nil ? summary.jobs : jobs.count
        let skipped = summary.skipped + (summary.deferred ?? 0)
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="batchfetch" tests="\(tests)" failures="\(failures)" skipped="\(skipped)" time="\(durationSeconds)">
              <testsuite name="\(Self.escape(manifest.path))" tests="\(tests)" failures="\(failures)" skipped="\(skipped)" time="\(durationSeconds)" timestamp="\(startedAt)">

            """
        for job in jobs {
            let open = "    <testcase classname=\"batchfetch.\(command)\" name=\"\(Self.escape(job.id))\" time=\"\(job.durationSeconds ?? 0)\""
            switch job.status {
            case .run(.downloaded), .run(.uploaded), .run(.upToDate), .verdict(.ok):
                xml += open + ">\n      <system-out>\(job.status.rawValue) \(Self.escape(job.dest))</system-out>\n    </testcase>\n"
            case .run(.failed), .run(.interrupted), .verdict(.drift), .verdict(.missing), .verdict(.unreachable):
                let code = job.error?.code.rawValue ?? job.status.rawValue
                let message = job.error?.message ?? job.status.rawValue
                xml += open + ">\n      <failure type=\"\(code)\" message=\"\(Self.escape(message))\">\(Self.escape(job.dest)): \(code): \(Self.escape(message))</failure>\n    </testcase>\n"
            case .run(.skipped):
                xml += open + ">\n      <skipped message=\"\(Self.escape(job.skippedBecause ?? "skipped"))\"/>\n    </testcase>\n"
            case .run(.deferred):
                xml += open + ">\n      <skipped message=\"deferred: \(job.deferredBecause ?? "budget") spent\"/>\n    </testcase>\n"
            }
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }

    /// Text for XML or HTML content and attribute values (the JUnit file, the HTML report).
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
