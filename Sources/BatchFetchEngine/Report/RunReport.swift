import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// Report v1 (Docs/Contracts.md §2, `schemas/report.schema.json`): what a run did, per job.
public struct RunReport: Codable, Sendable {
    public struct Tool: Codable, Sendable {
        public var name = "batchfetch"
        public var version: String
    }

    /// Which manifest, and which job lists, a report is for.
    public struct ManifestInfo: Codable, Sendable {
        public var path: String
        /// The manifest file's sha256.
        public var sha256: String
        /// Its `jobs_from` lists, in order, as written in it; nil when it has none.
        public var lists: [ListInfo]?

        public struct ListInfo: Codable, Sendable, Equatable {
            public var path: String
            public var sha256: String
        }

        public init(path: String, sha256: String, lists: [ListInfo]? = nil) {
            self.path = path
            self.sha256 = sha256
            self.lists = lists
        }

        /// The manifest's file and lists as read now (`sha256`: the manifest's, when the caller
        /// already has it).
        init(_ manifest: Manifest, sha256: String?) {
            self.init(path: manifest.path, sha256: sha256 ?? Runner.fileSHA256(manifest.path),
                      lists: manifest.lists.isEmpty ? nil
                          : manifest.lists.map { ListInfo(path: $0.file, sha256: Runner.fileSHA256($0.path)) })
        }

        /// What two reports must share to be of the same jobs: the manifest's sha256 and each
        /// list's (a changed list is other jobs under the same manifest).
        public var identity: String {
            ([sha256] + (lists ?? []).map(\.sha256)).joined(separator: "+")
        }

        /// Which lists differ from `other`'s, as `file (sha256 old… → new…)`.
        func listChanges(to other: ManifestInfo) -> String {
            let before = lists ?? [], after = other.lists ?? []
            var changes: [String] = []
            for index in 0..<max(before.count, after.count) {
                let was = index < before.count ? before[index] : nil, now = index < after.count ? after[index] : nil
                guard was != now else { continue }
                changes.append("\(now?.path ?? was?.path ?? "?") (sha256 \(was.map { $0.sha256.prefix(12) + "…" } ?? "none") → "
                    + "\(now.map { $0.sha256.prefix(12) + "…" } ?? "none"))")
            }
            return changes.joined(separator: ", ")
        }
    }

    public enum Status: String, Codable, Sendable {
        case succeeded, failed, interrupted
        /// The run stopped at its budget with nothing failed: the next run continues.
        case deferred
    }

    public struct Summary: Codable, Sendable {
        public var jobs = 0
        public var downloaded = 0
        /// Present when a job was uploaded.
        public var uploaded: Int?
        public var upToDate = 0
        public var failed = 0
        public var skipped = 0
        public var interrupted = 0
        /// Present when a job was deferred (a budget was spent).
        public var deferred: Int?
        public var bytesTransferred: Int64 = 0
        public var bytesTotal: Int64 = 0
        /// Jobs published from the content cache, when any was.
        public var fromCache: Int?
        /// `check` (per mirror) and `verify` (per job) verdict counts.
        public var ok: Int?
        public var drift: Int?
        public var missing: Int?
        public var unreachable: Int?

        public init() {}

        enum CodingKeys: String, CodingKey {
            case jobs, downloaded, uploaded, upToDate = "up_to_date", failed, skipped, interrupted, deferred
            case bytesTransferred = "bytes_transferred", bytesTotal = "bytes_total", fromCache = "from_cache", ok, drift, missing
            case unreachable
        }
    }

    public struct Attempt: Codable, Sendable {
        public var mirrorIndex: Int
        public var url: String
        public var httpStatus: Int?
        public var code: ErrorCode?
        public var message: String?
        public var waitedSeconds: Double?
        /// A bad piece (`piece_mismatch`): its index, 0-based, and its bytes as `first-last`.
        public var index: Int?
        public var bytes: String?

        enum CodingKeys: String, CodingKey {
            case mirrorIndex = "mirror_index", url, httpStatus = "http_status", code, message
            case waitedSeconds = "waited_seconds", index, bytes
        }
    }

    public struct JobError: Codable, Sendable {
        public var code: ErrorCode
        public var message: String
        public var attempts: [Attempt]?
    }

    public struct Job: Codable, Sendable {
        public var id: String
        /// `upload` for an upload job (whose `dest` is the file sent); absent for a download.
        public var kind: String?
        public var status: JobResult.Status
        public var url: String?
        public var mirrorIndex: Int?
        public var redirects: [String]?
        public var dest: String
        public var size: Int64?
        public var checksums: [String: String]?
        public var checksumVerified: Bool?
        public var httpStatus: Int?
        public var etag: String?
        public var lastModified: String?
        public var attempts: Int?
        public var resumedFrom: Int64?
        public var bytesTransferred: Int64?
        public var segments: Int?
        /// Pieces found bad and fetched again; hedged ranges; the mirrors a `sources: all`
        /// download drew from (Docs/Mirrors.md) — each only when there is something to say.
        public var piecesRepaired: Int?
        public var hedged: Int?
        public var mirrorsUsed: [Int]?
        public var durationSeconds: Double?
        /// Seconds after the run's `started_at` when the job started (`run` only; absent for a
        /// job that never started): with `duration_seconds`, the job's place on a timeline
        /// (`batchfetch report --format html`).
        public var startedSeconds: Double?
        public var error: JobError?
        public var skippedBecause: String?
        /// Which budget stopped a `deferred` job: `max_duration` or `max_bytes`.
        public var deferredBecause: String?
        public var copiedFrom: String?
        /// Where a downloaded job's bytes came from (``ContentSource``).
        public var source: ContentSource?
        /// What `extract:` made of the archive (``Extraction``).
        public var extracted: Extraction?
        /// Why an upload job is `up_to_date`: the target's evidence.
        public var evidence: String?
        public var mirrors: [MirrorCheck]?
        /// Every request of a job that succeeded after a failure (a failed job has them in `error`).
        public var attemptLog: [Attempt]?
        /// Who signed a checksum file whose job has `signature:` (Docs/Signatures.md).
        public var signedBy: Signer?
        /// Who signed the checksum file a job's digests came from.
        public var checksumsSignedBy: Signer?

        enum CodingKeys: String, CodingKey {
            case id, kind, status, url, mirrorIndex = "mirror_index", redirects, dest, size, checksums
            case checksumVerified = "checksum_verified", httpStatus = "http_status", etag
            case lastModified = "last_modified", attempts, resumedFrom = "resumed_from"
            case bytesTransferred = "bytes_transferred", segments, durationSeconds = "duration_seconds"
            case startedSeconds = "started_seconds", error
            case skippedBecause = "skipped_because", deferredBecause = "deferred_because", copiedFrom = "copied_from", source, extracted, evidence, mirrors
            case attemptLog = "attempt_log", signedBy = "signed_by", checksumsSignedBy = "checksums_signed_by"
            case piecesRepaired = "pieces_repaired", hedged, mirrorsUsed = "mirrors_used"
        }
    }

    /// Which jobs a report lists (`--report-jobs`; `jobs_reported` in report v1): a nightly
    /// rerun of a million files listed every one of them, up to date, in a 380 MB report
    /// (bench/results/scale.md); its summary still counts every job.
    public enum JobsReported: String, Codable, Sendable, CaseIterable {
        /// Every job that is not `up_to_date`: what the run changed or could not do.
        case changed
        /// Jobs that `failed`, were `skipped` or `interrupted`.
        case failed

        /// Whether a job with `status` is listed.
        public func lists(_ status: JobResult.Status) -> Bool {
            switch self {
            case .changed: return status != .upToDate
            case .failed: return status == .failed || status == .skipped || status == .interrupted
            }
        }

        /// Of two reports' forms, the one that lists fewer jobs (`failed` lists a subset of `changed`).
        static func narrower(_ a: JobsReported?, _ b: JobsReported?) -> JobsReported? {
            a == .failed || b == .failed ? .failed : (a ?? b)
        }
    }

    /// The command that made a report (`command` in report v1).
    public enum Command: String, Codable, Sendable {
        case run, check, verify
    }

    public var schemaVersion = 1
    public var tool: Tool
    public var command: Command
    public var manifest: ManifestInfo
    public var startedAt: String
    public var finishedAt: String
    public var durationSeconds: Double
    public var status: Status
    public var summary: Summary
    /// The shard this report covers (`--shard`); absent for a whole manifest.
    public var shard: ShardScope?
    /// The shard reports a `merge-reports` report was made from, as named on its command line.
    public var mergedFrom: [String]?
    /// Absent when `jobs` lists every job; else which ones it lists (``JobsReported``).
    public var jobsReported: JobsReported?
    /// What the run's hooks did (Docs/Hooks.md); absent when the manifest has none.
    public var hooks: [HookRecord]?
    public var jobs: ReportJobs

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version", tool, command, manifest, startedAt = "started_at"
        case finishedAt = "finished_at", durationSeconds = "duration_seconds", status, summary, shard
        case mergedFrom = "merged_from", jobsReported = "jobs_reported", hooks, jobs
    }
}

extension RunReport.Job {
    /// The report entry of a job result; every URL in it is already redacted or server-given.
    public init(_ result: JobResult) {
        id = result.id
        kind = result.isUpload ? "upload" : nil
        status = result.status
        url = result.url
        mirrorIndex = result.mirrorIndex
        redirects = result.redirects.isEmpty ? nil : result.redirects
        dest = result.dest
        size = result.size
        checksums = result.checksums.isEmpty ? nil : result.checksums
        checksumVerified = result.checksumVerified
        httpStatus = result.httpStatus
        etag = result.etag
        lastModified = result.lastModified
        attempts = [.downloaded, .uploaded, .failed, .interrupted].contains(result.status) ? result.attempts.count : nil
        resumedFrom = result.resumedFrom
        segments = result.segments
        piecesRepaired = result.piecesRepaired > 0 ? result.piecesRepaired : nil
        hedged = result.hedged > 0 ? result.hedged : nil
        mirrorsUsed = result.mirrorsUsed
        copiedFrom = result.copiedFrom
        source = result.source
        extracted = result.extracted
        evidence = result.evidence
        mirrors = result.mirrors
        bytesTransferred = result.status == .skipped ? nil : result.bytesTransferred
        durationSeconds = (result.duration * 1000).rounded() / 1000
        startedSeconds = result.startedAfter.map { ($0 * 1000).rounded() / 1000 }
        skippedBecause = result.skippedBecause
        deferredBecause = result.deferredBecause?.rawValue
        signedBy = result.signedBy
        checksumsSignedBy = result.checksumsSignedBy
        let attempts = result.attempts.map { attempt in
            RunReport.Attempt(
                mirrorIndex: attempt.mirrorIndex,
                url: attempt.url,
                httpStatus: attempt.httpStatus, code: attempt.failure?.code, message: attempt.failure?.message,
                waitedSeconds: attempt.waited > 0 ? (attempt.waited * 1000).rounded() / 1000 : nil,
                index: attempt.piece?.index, bytes: attempt.piece.map { "\($0.bytes.lowerBound)-\($0.bytes.upperBound - 1)" })
        }
        if let failure = result.failure {
            error = RunReport.JobError(code: failure.code, message: failure.message, attempts: attempts.isEmpty ? nil : attempts)
        } else if result.attempts.contains(where: { $0.failure != nil || $0.waited > 0 }) {
            // A job that succeeded after retries or failover keeps its history too.
            attemptLog = attempts
        }
    }
}

extension RunReport {
    /// Writes the report atomically: a temp file in the same directory, then rename, so readers
    /// never see half a report.
    public func write(to path: String) throws {
        try SafeDirectory.writeAtomically(path: path) { (writer: inout FileWriter) throws(BatchFetchError) in
            try ReportText.write(self, to: &writer)
        }
    }

    /// RFC 3339 in UTC (`2026-11-23T15:34:00Z`), by ``UTCTime``: Foundation's formatters go
    /// through ICU, whose data lands in the RSS of every run (bench/results/history.md).
    static func timestamp(_ date: Date) -> String {
        UTCTime.rfc3339(date)
    }
}
