import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec

/// What happened to one job; the report's per-job entry is made from it.
public struct JobResult: Sendable {
    /// What `run` did with a job.
    public enum Outcome: String, Sendable, Codable, CaseIterable {
        case downloaded
        /// An upload job's file was sent and the target answered 2xx.
        case uploaded
        case upToDate = "up_to_date"
        case failed
        case skipped
        case interrupted
        /// Not finished when the run's budget (`max_duration`, `max_bytes`) was spent; the next
        /// run continues it (its partial is kept).
        case deferred
    }

    /// A job's status in a report: a run's outcome, or the verdict of `check` (its most serious
    /// mirror's) or `verify` — two sets that never mix. One string in report v1.
    public enum Status: Sendable, Hashable, Codable, CustomStringConvertible {
        case run(Outcome)
        /// Every mirror (check) or the local file (verify) is as expected (`ok`); something
        /// differs (`drift`); 404/410 on a mirror or no file at `dest` (`missing`); no usable
        /// answer after the retries (`unreachable`).
        case verdict(MirrorVerdict.Status)

        /// A run's job that did what it was for: downloaded, uploaded, or already up to date.
        public var succeeded: Bool {
            self == .downloaded || self == .uploaded || self == .upToDate
        }

        public static let downloaded = Status.run(.downloaded)
        public static let uploaded = Status.run(.uploaded)
        public static let upToDate = Status.run(.upToDate)
        public static let failed = Status.run(.failed)
        public static let skipped = Status.run(.skipped)
        public static let interrupted = Status.run(.interrupted)
        public static let deferred = Status.run(.deferred)
        public static let ok = Status.verdict(.ok)
        public static let drift = Status.verdict(.drift)
        public static let missing = Status.verdict(.missing)
        public static let unreachable = Status.verdict(.unreachable)

        /// The report's string.
        public var rawValue: String {
            switch self {
            case .run(let outcome): outcome.rawValue
            case .verdict(let verdict): verdict.rawValue
            }
        }

        public var description: String { rawValue }

        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            if let outcome = Outcome(rawValue: text) {
                self = .run(outcome)
            } else if let verdict = MirrorVerdict.Status(rawValue: text) {
                self = .verdict(verdict)
            } else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown job status '\(text)'"))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }

    public var id: String
    public var status: Status
    /// The URL that served the file (redacted; a redirect target when one was followed).
    public var url: String?
    public var mirrorIndex: Int?
    public var redirects: [String] = []
    /// Destination relative to output_dir (redacted).
    public var dest: String
    public var size: Int64?
    /// Digests of the published file, by algorithm.
    public var checksums: [String: String] = [:]
    public var checksumVerified: Bool?
    public var httpStatus: Int?
    public var etag: String?
    public var lastModified: String?
    public var attempts: [AttemptRecord] = []
    public var resumedFrom: Int64?
    /// Connections of a segmented transfer; nil for a single stream.
    public var segments: Int?
    /// Pieces found bad and fetched again (`pieces:`, Docs/Mirrors.md); 0 when none.
    public var piecesRepaired = 0
    /// Ranges also asked of a second connection because they lagged (hedged tails); 0 when none.
    public var hedged = 0
    /// The mirrors (indices) a `sources: all` download drew bytes from, when more than one.
    public var mirrorsUsed: [Int]?
    /// What the run should say about this job without failing it (a mirror dropped, `sources:
    /// all` without proof of one content): emitted as warnings, once each.
    public var warnings: [String] = []
    /// The job whose published file this one took (the same URL to another dest).
    public var copiedFrom: String?
    /// Where a downloaded job's bytes came from; nil for a job that fetched nothing.
    public var source: ContentSource?
    /// What `extract:` made of the archive, once it is in place.
    public var extracted: Extraction?
    /// Per mirror verdicts (`check`).
    public var mirrors: [MirrorCheck]?
    public var bytesTransferred: Int64 = 0
    public var duration: Double = 0
    /// Seconds after the run started when the job started; nil for one that never started.
    public var startedAfter: Double?
    public var failure: BatchFetchError?
    public var skippedBecause: String?
    /// Which budget a `deferred` job was stopped by (``RunBudget/Reason``).
    public var deferredBecause: RunBudget.Reason?
    /// An upload job's result (`kind: upload` in the report).
    public var isUpload = false
    /// Why an upload job is up to date: what the target showed (``UploadRules/alreadyThere``).
    public var evidence: String?
    /// Who signed this checksum file, when its job has `signature:` and it verified.
    public var signedBy: Signer?
    /// Who signed the checksum file this job's digests came from (`checksums_from`).
    public var checksumsSignedBy: Signer?
    /// The signed text of a clear-signed checksum file: the only part whose digests count.
    package var signedText: String?

    public init(id: String, status: Status, dest: String) {
        self.id = id
        self.status = status
        self.dest = dest
    }

    /// A job that failed before any request.
    init(failed job: Job, _ failure: BatchFetchError) {
        self.init(id: job.id, status: .failed, dest: job.dest.redacted)
        self.failure = failure
        isUpload = job.isUpload
    }
}
