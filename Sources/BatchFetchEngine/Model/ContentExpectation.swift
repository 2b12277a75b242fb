import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec

/// What a file's content must be — a size and pinned checksums — and who says so; the one check
/// of content against it, shared by the publish, the twin copy, the up-to-date check and
/// `verify`, so they cannot disagree on what a match is or word a mismatch differently.
struct ContentExpectation: Sendable {
    /// Who sets the expectation: it names the error code and the wording of a mismatch.
    enum Authority: Sendable {
        /// The manifest's `size` and `checksums`: `size_mismatch`, `checksum_mismatch`.
        case manifest
        /// The lockfile's size and sha256: `lock_mismatch`.
        case lock
        /// The size the server announced for the body: `size_mismatch`.
        case server
    }

    var size: Int64?
    var checksums: [Checksum]
    var authority: Authority

    init(size: Int64?, checksums: [Checksum] = [], authority: Authority) {
        self.size = size
        self.checksums = checksums
        self.authority = authority
    }

    /// The job's expectations; `locked` when they come from the lockfile (`run --locked`, where
    /// ``Job/locked(by:)`` merged the entry into the job).
    init(job: Job, locked: Bool = false) {
        self.init(size: job.size, checksums: job.checksums, authority: locked ? .lock : .manifest)
    }

    /// A lockfile entry's size and sha256.
    init(lock entry: LockFile.Entry) {
        self.init(size: entry.size, checksums: [Checksum(algorithm: .sha256, hex: entry.sha256)], authority: .lock)
    }

    /// A sha256 is pinned: the proof that bytes of several mirrors make one file.
    var pinsSHA256: Bool { checksums.contains { $0.algorithm == .sha256 } }

    /// Nil when `size` is the expected one, else the failure to report.
    func sizeMismatch(_ size: Int64) -> BatchFetchError? {
        guard let expected = self.size, expected != size else { return nil }
        return BatchFetchError(code(.sizeMismatch), "\(size) bytes, \(says) \(expected)")
    }

    /// Nil when content of `size` bytes with `digests` (hex by algorithm name) matches, else the
    /// first mismatch: the size, then each checksum in the manifest's order.
    func mismatch(size: Int64, digests: [String: String]) -> BatchFetchError? {
        if let failure = sizeMismatch(size) { return failure }
        guard let wrong = checksums.first(where: { digests[$0.algorithm.rawValue] != $0.hex }) else { return nil }
        let actual = digests[wrong.algorithm.rawValue] ?? "not computed"
        return BatchFetchError(code(.checksumMismatch), "\(wrong.algorithm.rawValue) is \(actual), \(says) \(wrong.hex)")
    }

    /// The first mismatch against any of `expectations`, in order.
    static func firstMismatch(_ expectations: [ContentExpectation], size: Int64, digests: [String: String]) -> BatchFetchError? {
        expectations.lazy.compactMap { $0.mismatch(size: size, digests: digests) }.first
    }

    private var says: String {
        switch authority {
        case .manifest: "the manifest says"
        case .lock: "the lock says"
        case .server: "the server announced"
        }
    }

    private func code(_ code: ErrorCode) -> ErrorCode {
        authority == .lock ? .lockMismatch : code
    }
}
