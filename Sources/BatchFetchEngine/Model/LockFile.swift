import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// The lockfile (Docs/Contracts.md §4, `schemas/lock.schema.json`): what each job's content was when
/// `batchfetch pin` ran — size and sha256 per job, and per mirror its URL, size, ETag and
/// Last-Modified. Deterministic (sorted keys, no timestamps) so it diffs cleanly in git. URLs
/// are stored redacted (`${VAR}`), since lockfiles are committed.
package struct LockFile: Codable, Sendable, Equatable {
    package struct Mirror: Codable, Sendable, Equatable {
        package var url: String
        package var size: Int64?
        package var etag: String?
        package var lastModified: String?
        /// The content's sha256 as this mirror announced it (`Repr-Digest`/`Content-Digest`);
        /// absent when it announces none.
        package var sha256: String?

        package init(url: String, size: Int64?, etag: String?, lastModified: String?, sha256: String?) {
            self.url = url
            self.size = size
            self.etag = etag
            self.lastModified = lastModified
            self.sha256 = sha256
        }

        enum CodingKeys: String, CodingKey {
            case url, size, etag, lastModified = "last_modified", sha256
        }
    }

    package struct Entry: Codable, Sendable, Equatable {
        package var dest: String
        package var size: Int64
        package var sha256: String
        package var mirrors: [Mirror]
        /// Digests besides sha256 that the job was held to when pinned — a source's published
        /// md5 or git blob id, another algorithm the manifest pins — by algorithm name; absent
        /// when there were none (an additive key). `check` compares a source's listing with
        /// them, and a locked run holds the file to them again.
        package var checksums: [String: String]?
        /// Who signed a checksum file whose job has `signature:` (Docs/Signatures.md); absent
        /// otherwise (an additive key).
        package var signedBy: Signer?
        /// The sha256 of each piece (`pin --pieces`), held to a locked run as `pieces:` is
        /// (Docs/Mirrors.md); absent otherwise (an additive key). `length` is in bytes.
        package var pieces: PieceHashes?

        package init(dest: String, size: Int64, sha256: String, mirrors: [Mirror], checksums: [String: String]? = nil,
                     signedBy: Signer? = nil, pieces: PieceHashes? = nil) {
            self.dest = dest
            self.size = size
            self.sha256 = sha256
            self.mirrors = mirrors
            self.checksums = checksums
            self.signedBy = signedBy
            self.pieces = pieces
        }

        enum CodingKeys: String, CodingKey {
            case dest, size, sha256, mirrors, checksums, signedBy = "signed_by", pieces
        }

        /// Every digest pinned: the sha256 and the others.
        var allChecksums: [Checksum] {
            [Checksum(algorithm: .sha256, hex: sha256)] + (checksums ?? [:]).sorted { $0.key < $1.key }.compactMap { name, hex in
                try? Checksum.parse("\(name):\(hex)").get()
            }
        }
    }

    /// What a source resolved to when it was pinned (Docs/Sources.md): the source as the
    /// manifest wrote it (redacted) and the revision listed — a Hub commit, a Zenodo record's
    /// revision, a figshare article's version, what a resolver printed.
    package struct Resolved: Codable, Sendable, Equatable {
        package var source: String
        package var revision: String

        package init(source: String, revision: String) {
            self.source = source
            self.revision = revision
        }
    }

    package var lockVersion = 1
    /// The manifest's file name, for people.
    package var manifest: String
    package var jobs: [String: Entry]
    /// The sources' resolutions by source job id; absent when the manifest has no source (an
    /// additive key: lockfiles written before sources existed read as before).
    package var sources: [String: Resolved]?

    package init(manifest: String, jobs: [String: Entry], sources: [String: Resolved]? = nil) {
        self.manifest = manifest
        self.jobs = jobs
        self.sources = sources
    }

    enum CodingKeys: String, CodingKey {
        case lockVersion = "lock_version", manifest, jobs, sources
    }

    /// The lockfile with only the entries of `manifest`'s jobs (a shard's part of a whole lock).
    package func restricted(to manifest: Manifest) -> LockFile {
        let ids = Set(manifest.jobs.map(\.id))
        return LockFile(manifest: self.manifest, jobs: jobs.filter { ids.contains($0.key) }, sources: sources)
    }

    /// `datasets.yaml` → `datasets.lock.json`, beside the manifest.
    package static func defaultPath(forManifest path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let base = url.pathExtension.isEmpty ? url : url.deletingPathExtension()
        return base.path + ".lock.json"
    }

    package enum LoadError: Error, CustomStringConvertible {
        case missing(String)
        case unreadable(String, String)

        package var description: String {
            switch self {
            case .missing(let path): "no lockfile at \(path) (write one with: batchfetch pin)"
            case .unreadable(let path, let reason): "cannot read the lockfile \(path): \(reason)"
            }
        }
    }

    package static func load(path: String) throws(LoadError) -> LockFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw .missing(path) }
        do {
            let lock = try JSONDecoder().decode(LockFile.self, from: data)
            guard lock.lockVersion == 1 else { throw LoadError.unreadable(path, "lock_version \(lock.lockVersion) is not 1") }
            return lock
        } catch let error as LoadError {
            throw error
        } catch {
            throw .unreadable(path, "\(error)")
        }
    }

    /// Writes the lockfile atomically.
    package func write(to path: String) throws {
        try SafeDirectory.writeAtomically(path: path, try StableJSON.encode(self) + Data("\n".utf8))
    }

    /// How the manifest's jobs and the lock's differ: jobs the lock lacks, and jobs it has that
    /// the manifest does not. Empty when they match.
    package func mismatch(with manifest: Manifest) -> [String] {
        let ids = Set(manifest.jobs.map(\.id))
        let added = manifest.jobs.map(\.id).filter { jobs[$0] == nil }
        let removed = jobs.keys.sorted().filter { !ids.contains($0) }
        return added.map { "job '\($0)' is not in the lock" } + removed.map { "the lock has job '\($0)', which the manifest no longer has" }
            + signerMismatch(with: manifest)
    }

    /// The lock's piece hashes that cannot be its files' (another count than the size makes, a
    /// length the contract does not allow), one line per job: a locked run refuses them before
    /// any request.
    package var pieceProblems: [String] {
        jobs.sorted { $0.key < $1.key }.compactMap { id, entry in
            entry.pieces?.problem(for: entry.size).map { "job '\(id)': \($0)" }
        }
    }

    /// Where the signers the lock recorded differ from the keys the manifest names
    /// (``signerMismatch(_:_:)``), job by job.
    package func signerMismatch(with manifest: Manifest) -> [String] {
        manifest.jobs.compactMap { job in jobs[job.id].flatMap { Self.signerMismatch(job, $0) } }
    }

    /// How the signer the lock recorded for a checksum file differs from the key the manifest
    /// names now (another key, a signature added or dropped); nil when they agree. A lock pinned
    /// under one key must not vouch for files signed by another (Docs/Signatures.md).
    static func signerMismatch(_ job: Job, _ entry: Entry) -> String? {
        switch (job.signature, entry.signedBy) {
        case (nil, nil): return nil
        case (let rule?, let signer?):
            return rule.accepts(signer) ? nil
                : "job '\(job.id)': the lock was pinned with a file signed by \(signer.description); the manifest names \(rule.keyDescription)"
        case (let rule?, nil):
            return "job '\(job.id)': the manifest names \(rule.keyDescription) but the lock was pinned without a signature"
        case (nil, let signer?):
            return "job '\(job.id)': the lock was pinned with a file signed by \(signer.description) but the manifest names no signature"
        }
    }
}

extension Job {
    /// This job held to its lock entry (`run --locked`): the lock's sha256 and size become
    /// expectations. A manifest that pins other values than the lock fails at once.
    func locked(by entry: LockFile.Entry) -> Result<Job, BatchFetchError> {
        var job = self
        if let pinned = checksums.first(where: { $0.algorithm == .sha256 }), pinned.hex != entry.sha256 {
            return .failure(BatchFetchError(.lockMismatch, "the manifest pins \(pinned) but the lock says sha256:\(entry.sha256)"))
        }
        if let size, size != entry.size {
            return .failure(BatchFetchError(.lockMismatch, "the manifest says \(size) bytes but the lock says \(entry.size)"))
        }
        if !checksums.contains(where: { $0.algorithm == .sha256 }) {
            job.checksums.append(Checksum(algorithm: .sha256, hex: entry.sha256))
        }
        job.size = entry.size
        if job.pieces == nil, let pieces = entry.pieces { job.pieces = pieces }
        return .success(job)
    }
}
