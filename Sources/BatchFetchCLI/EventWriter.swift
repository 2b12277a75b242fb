import BatchFetchEngine
import BatchFetchFiles
import Foundation

/// `run --events PATH|-`: the run's events as NDJSON, one object per line, each with `event`
/// and `time`: `job_started`, `progress` (one line per job in flight, at most 4 a second),
/// `job_finished` (the job's report entry) and `run_finished` (status and summary).
final class EventWriter {
    private let handle: FileHandle
    private let closes: Bool

    init(path: String) throws {
        if path == "-" {
            handle = .standardOutput
            closes = false
        } else {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            closes = true
        }
    }

    deinit {
        if closes { try? handle.close() }
    }

    /// Whether writing an event never waits for a reader (see ``Console/writesNeverWait(_:)``).
    var neverWaits: Bool { Console.writesNeverWait(handle.fileDescriptor) }

    func handle(_ event: RunEvent) {
        let time = now()
        switch event {
        case .warning(let message):
            emit(Line(event: "warning", time: time, message: message))
        case .jobStarted(let id, let dest, let url):
            emit(Line(event: "job_started", time: time, job: id, dest: dest, url: url))
        case .progress(let progress):
            for job in progress.active {
                emit(Line(event: "progress", time: time, job: job.id, bytes: job.bytes, total: job.total,
                          bytesTransferred: job.transferred))
            }
        case .jobFinished(let result):
            emit(Line(event: "job_finished", time: time, job: result.id, result: RunReport.Job(result)))
        case .runFinished(let report):
            emit(Line(event: "run_finished", time: time, status: report.status.rawValue, summary: report.summary))
        }
    }

    private func emit(_ line: Line) {
        guard let data = try? StableJSON.line(line) else { return }
        handle.write(data + Data("\n".utf8))
    }

    /// RFC 3339 in UTC with milliseconds, truncated (``UTCTime``: Foundation's formatters go
    /// through ICU).
    private func now() -> String {
        UTCTime.rfc3339(Date(), milliseconds: true)
    }

    /// One NDJSON line; absent fields are left out.
    private struct Line: Encodable {
        var event: String
        var time: String
        var job: String?
        var dest: String?
        var url: String?
        var bytes: Int64?
        var total: Int64?
        var bytesTransferred: Int64?
        var result: RunReport.Job?
        var status: String?
        var summary: RunReport.Summary?
        var message: String?

        enum CodingKeys: String, CodingKey {
            case event, time, job, dest, url, bytes, total, bytesTransferred = "bytes_transferred", result, status, summary, message
        }
    }
}
