import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// What a run reports while it goes, in order: `jobStarted` and `jobFinished` once per job that
/// runs (skipped jobs only finish), `progress` snapshots of the jobs in flight about four times a
/// second while any are, `warning`s about the run as a whole (a state store set aside) before
/// the jobs, and `runFinished` last, with the report.
public enum RunEvent: Sendable {
    case warning(String)
    case jobStarted(id: String, dest: String, url: String)
    case progress(RunProgress)
    case jobFinished(JobResult)
    case runFinished(RunReport)
}

/// A snapshot of a run in flight.
public struct RunProgress: Sendable, Equatable {
    public struct Active: Sendable, Equatable {
        public var id: String
        /// Bytes of the file present so far (resumed bytes included).
        public var bytes: Int64
        public var total: Int64?
        /// Bytes received in this run, for rates.
        public var transferred: Int64
        /// Seconds since the job started.
        public var elapsed: Double
        /// Set once the job unpacks its archive (`extract:`).
        public var unpacking: Unpacking?

        /// What the job counts for in ``RunProgress/bytesKnown``: its total, or what it has when
        /// that is more (or the total is not known yet).
        public var knownBytes: Int64 { max(total ?? 0, bytes) }

        public init(id: String, bytes: Int64, total: Int64?, transferred: Int64, elapsed: Double, unpacking: Unpacking? = nil) {
            self.id = id
            self.bytes = bytes
            self.total = total
            self.transferred = transferred
            self.elapsed = elapsed
            self.unpacking = unpacking
        }
    }

    /// How far a job's unpacking is: entries read and bytes written.
    public struct Unpacking: Sendable, Equatable {
        public var entries: Int
        public var bytes: Int64

        public init(entries: Int, bytes: Int64) {
            self.entries = entries
            self.bytes = bytes
        }
    }

    /// Seconds since the run started.
    public var elapsed: Double
    public var jobs: Int
    public var finished: Int
    public var active: [Active]
    /// Bytes received so far in this run, finished jobs included.
    public var transferred: Int64
    /// Bytes of the run that are in place: files published (downloaded or up to date) and what
    /// the running jobs have so far (resumed bytes included).
    public var bytesDone: Int64 = 0
    /// Bytes the run is known to need: ``bytesDone`` plus the sizes still to come that the
    /// manifest or a response gave.
    public var bytesKnown: Int64 = 0
    /// Jobs whose size is not known yet (not in the manifest, and not announced by a response).
    public var unsized = 0

    public init(elapsed: Double, jobs: Int, finished: Int, active: [Active], transferred: Int64,
                bytesDone: Int64 = 0, bytesKnown: Int64 = 0, unsized: Int = 0) {
        self.elapsed = elapsed
        self.jobs = jobs
        self.finished = finished
        self.active = active
        self.transferred = transferred
        (self.bytesDone, self.bytesKnown, self.unsized) = (bytesDone, bytesKnown, unsized)
    }

    /// The snapshot after `job` finished, until the next one comes: the job leaves the running
    /// ones, and what it published (if it succeeded) counts as done.
    public mutating func finish(_ job: JobResult) {
        if let running = active.first(where: { $0.id == job.id }) {
            bytesDone -= running.bytes
            bytesKnown -= running.knownBytes
            active.removeAll { $0.id == job.id }
        }
        if job.status.succeeded {
            bytesDone += job.size ?? 0
            bytesKnown += job.size ?? 0
        }
        finished += 1
    }
}
