import BatchFetchSpec

/// What happened to one job; the report's per-job entry is made from it.
public struct JobResult: Sendable {
    public enum Status: String, Sendable, Codable {
        case downloaded
        case upToDate = "up_to_date"
        case failed
        case skipped
        case interrupted
        // `check` and `verify`:
        /// Every mirror (check) or the local file (verify) is as expected.
        case ok
        /// Something differs: see the mirrors' differences (check) or the error (verify).
        case drift
        /// 404/410 on a mirror (check), or no file at `dest` (verify).
        case missing
        /// A mirror gave no usable answer after its retries (check).
        case unreachable
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
    /// The job whose published file this one took (the same URL to another dest).
    public var copiedFrom: String?
    /// Per mirror verdicts (`check`).
    public var mirrors: [MirrorCheck]?
    public var bytesTransferred: Int64 = 0
    public var duration: Double = 0
    public var failure: DownloadFailure?
    public var skippedBecause: String?

    public init(id: String, status: Status, dest: String) {
        self.id = id
        self.status = status
        self.dest = dest
    }

    /// A job that failed before any request.
    init(failed job: Job, _ failure: DownloadFailure) {
        self.init(id: job.id, status: .failed, dest: job.dest.redacted)
        self.failure = failure
    }
}
