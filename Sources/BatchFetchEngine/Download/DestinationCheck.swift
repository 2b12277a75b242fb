import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// What the file at a job's `dest` is, without any network: missing, or its size and digests
/// checked against expectations. One check for `run` (is the job already done?), `run --dry-run`
/// (would it be?) and `verify` (did anything change behind batchfetch's back?).
///
/// With a ``StateCache`` the digests of a file whose identity (inode, size, mtime) is
/// unchanged since it was verified come from the cache, and freshly hashed ones are recorded;
/// `verify` passes none and hashes every file.
struct DestinationCheck {
    let job: Job
    let files: PartialFiles
    let state: StateCache?

    /// What was found at `dest`.
    enum Finding: Equatable {
        /// No regular file (nothing, a symlink, a directory…).
        case missing
        /// The file cannot be read: `failure` says why.
        case unreadable(size: Int64, BatchFetchError)
        /// The file differs from an expectation; `digests` are nil when the size already did.
        case differs(size: Int64, digests: [String: String]?, BatchFetchError)
        case matches(size: Int64, digests: [String: String])
    }

    /// Whether `run` has anything to do for the job.
    enum Verdict {
        /// `dest` matches the manifest: nothing to fetch.
        case upToDate(JobResult)
        /// `dest` matches, but `refresh: if-changed` asks the server (conditional GET).
        case revalidate(JobResult, etag: String?, lastModified: String?)
        case fetch
    }

    init(job: Job, root: SafeDirectory, state: StateCache?, listings: DirectoryListings? = nil) {
        self.job = job
        files = PartialFiles(root: root, dest: job.dest.resolved, listings: listings)
        self.state = state
    }

    /// Checks `dest` against `expectations`: its size first (no hashing when that differs), then
    /// the digests of every algorithm the job pins, plus sha256.
    func inspect(against expectations: [ContentExpectation]) -> Finding {
        examine(against: expectations).finding
    }

    /// What `run` does about the file at `dest`: nothing when it matches the manifest's size and
    /// checksums and `refresh` says that is enough, a conditional request for `if-changed`
    /// without a pinned checksum, else a fetch.
    func verdict() -> Verdict {
        guard job.settings.refresh != .always else { return .fetch }
        let (finding, cached) = examine(against: [ContentExpectation(job: job)])
        guard case .matches(let size, let digests) = finding else { return .fetch }
        var result = JobResult(id: job.id, status: .upToDate, dest: job.dest.redacted)
        result.size = size
        result.checksums = digests
        result.checksumVerified = job.checksums.isEmpty ? nil : true
        // A pinned checksum already says the content is the right one; otherwise if-changed asks
        // the server, conditionally when the state cache has the validators it served.
        guard job.settings.refresh == .ifChanged, job.checksums.isEmpty else { return .upToDate(result) }
        guard let cached, cached.etag ?? cached.lastModified != nil,
              cached.urlSHA256 == job.url.map({ MirrorURL.identity(of: $0.resolved) }) else { return .fetch }
        result.etag = cached.etag
        result.lastModified = cached.lastModified
        return .revalidate(result, etag: cached.etag, lastModified: cached.lastModified)
    }

    /// The finding, and the state cache's entry for the file as it was found (nil when there is
    /// none, or the size already differed). One `lstat` and one cache lookup: a rerun where
    /// everything is up to date costs no more per file.
    private func examine(against expectations: [ContentExpectation]) -> (finding: Finding, cached: StateCache.Entry?) {
        guard let status = files.destStatus() else { return (.missing, nil) }
        let size = Int64(status.st_size)
        if let failure = expectations.lazy.compactMap({ $0.sizeMismatch(size) }).first {
            return (.differs(size: size, digests: nil, failure), nil)
        }
        let cached = state?.entry(for: job.dest.resolved, status: status)
        let digests: [String: String]
        do {
            digests = try self.digests(cached: cached, status: status)
        } catch {
            return (.unreadable(size: size, error), cached)
        }
        if let failure = ContentExpectation.firstMismatch(expectations, size: size, digests: digests) {
            return (.differs(size: size, digests: digests, failure), cached)
        }
        return (.matches(size: size, digests: digests), cached)
    }

    /// The algorithms hashed besides sha256 (which always is).
    var algorithms: DigestAlgorithms {
        DigestAlgorithms(also: job.checksums.map(\.algorithm).filter { $0 != .sha256 }, blobSize: job.size)
    }

    /// The file's digests: `cached`'s while it covers every algorithm needed, else hashed now and
    /// recorded under the identity the file had before hashing (`status`), keeping the cached
    /// validators — a file changed while it was read then fails the next run's identity check
    /// and is hashed again.
    private func digests(cached: StateCache.Entry?, status: stat) throws(BatchFetchError) -> [String: String] {
        if let cached, (algorithms.also.map(\.rawValue) + ["sha256"]).allSatisfy({ cached.digests[$0] != nil }) {
            return cached.digests
        }
        let (hashed, _) = try files.digests(of: files.destName, also: algorithms)
        state?.record(job.dest.resolved, status: status, digests: hashed, urlSHA256: cached?.urlSHA256,
                      etag: cached?.etag, lastModified: cached?.lastModified)
        return hashed
    }
}
