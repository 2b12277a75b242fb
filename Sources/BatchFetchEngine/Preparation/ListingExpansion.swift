import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// Turns each job that lists many (``Job/listing``: a bucket prefix or a source) into one job
/// per object or file, before a command builds its graph (Docs/Sources.md, "Shape";
/// Docs/ObjectStores.md, "Prefixes"). Each listed file the job's globs keep becomes a job with
/// the id `JOBID/` + its relative path, the URL the listing gives, the dest `DIR/` + the
/// relative path, the size and digests the listing publishes, and every other setting of the
/// listing job; jobs that depended on the listing job depend on all of its files.
///
/// A listing that fails leaves the listing job in place, with its failure in ``failures``: the
/// run reports it failed (and skips its dependents) without asking anything more. A relative
/// path that would leave `DIR` (`..`, an absolute path, an empty segment) fails its own job
/// `unsafe_path`. Which commands list and which read the lock is ``Preparation``'s table.
package struct ListingExpansion: Sendable {
    package var manifest: Manifest
    /// Why each job could not be expanded or placed, by id.
    package var failures: [String: BatchFetchError] = [:]
    /// What each source resolved to, by the source job's id (what `pin` writes into the lock).
    package var resolved: [String: LockFile.Resolved] = [:]

    /// `manifest` with its listing jobs expanded as they list now; unchanged (and no request
    /// made) when it has none.
    static func expand(_ manifest: Manifest, transport: any HTTPTransport, environment: [String: String]) async -> ListingExpansion {
        var expansion = ListingExpansion(manifest: manifest)
        guard manifest.jobs.contains(where: { $0.listing != nil }) else { return expansion }
        let hosts = HostLimiter(limit: manifest.perHost)
        var files: [String: [Job]] = [:]
        for job in manifest.jobs {
            guard let listing = job.listing else { continue }
            // Read once per listing job (the Hub's token may be a file): its API calls and its
            // files' jobs carry the same header.
            let credentials = SourceCredentials(job: job, environment: environment)
            let listed: Result<[(relative: String, file: ListedFile)], BatchFetchError>
            if let reference = listing.reference {
                let resolution = SourceResolution(job: job, reference: reference, manifest: manifest, transport: transport,
                                                  hosts: hosts, credentials: credentials, environment: environment)
                listed = await resolution.resolve().map { found in
                    expansion.resolved[job.id] = LockFile.Resolved(source: job.url?.redacted ?? "", revision: found.listing.revision)
                    let selection = SourceReference.Selection(path: found.path)
                    return found.listing.files.compactMap { file in selection.relative(file.path).map { ($0, file) } }
                }
            } else {
                let network = JobNetwork(job: job, transport: transport, perHost: manifest.perHost, environment: environment)
                listed = await BucketPrefix.list(job, network: network, hosts: hosts)
            }
            switch listed {
            case .failure(let failure):
                expansion.failures[job.id] = failure
            case .success(let found):
                files[job.id] = found.filter { listing.keeps($0.relative) }.map { relative, file in
                    var fileJob = self.fileJob(job, relative: relative, url: file.url, size: file.size, credentials: credentials)
                    fileJob.checksums = file.checksums
                    if let problem = Self.placementProblem(relative, in: job) {
                        expansion.failures[fileJob.id] = BatchFetchError(.unsafePath, "'\(file.path)' " + problem)
                    }
                    return fileJob
                }
            }
        }
        expansion.manifest = replacing(manifest, files)
        return expansion
    }

    /// `manifest` with its listing jobs expanded into the files `lock` pinned for them (its
    /// entries whose id is the listing job's id and `/`): `run --locked`, `plan --locked` and
    /// `verify` see exactly the pinned listing, without listing again. No request is made.
    static func expand(_ manifest: Manifest, lock: LockFile, environment: [String: String]) -> ListingExpansion {
        var files: [String: [Job]] = [:]
        for job in manifest.jobs where job.listing != nil {
            let credentials = SourceCredentials(job: job, environment: environment)
            let prefix = job.id + "/"
            files[job.id] = lock.jobs.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.map { id, entry in
                var fileJob = fileJob(job, relative: String(id.dropFirst(prefix.count)), url: entry.mirrors.first?.url ?? "",
                                      size: entry.size, credentials: credentials)
                fileJob.dest = TemplatedString(literal: entry.dest)
                // What the repository published, held again (the lock's sha256 is added by
                // `--locked` itself).
                fileJob.checksums = entry.allChecksums.filter { $0.algorithm != .sha256 }
                return fileJob
            }
        }
        return ListingExpansion(manifest: files.isEmpty ? manifest : replacing(manifest, files))
    }

    /// The listing jobs of `manifest` left as they are, each failing with `failure`: a command
    /// that may not list (`verify` without a lockfile) says why it cannot see their files.
    static func unexpanded(_ manifest: Manifest, failure: BatchFetchError) -> ListingExpansion {
        var expansion = ListingExpansion(manifest: manifest)
        for job in manifest.jobs where job.listing != nil { expansion.failures[job.id] = failure }
        return expansion
    }

    /// `manifest` with each listing job that `files` has an entry for replaced, in place, by
    /// those jobs, and every job that depended on it depending on all of them.
    private static func replacing(_ manifest: Manifest, _ files: [String: [Job]]) -> Manifest {
        var jobs: [Job] = []
        jobs.reserveCapacity(manifest.jobs.count + files.values.reduce(0) { $0 + $1.count })
        for job in manifest.jobs { jobs += files[job.id] ?? [job] }
        let ids = files.mapValues { $0.map(\.id) }
        for index in jobs.indices where jobs[index].dependsOn.contains(where: { ids[$0] != nil }) {
            jobs[index].dependsOn = jobs[index].dependsOn.flatMap { ids[$0] ?? [$0] }
        }
        var replaced = manifest
        replaced.jobs = jobs
        return replaced
    }

    /// How this (network) expansion differs from what `lock` pinned, per file job id, for
    /// `check`: files listed now that the lock lacks (`added`), pinned files no longer listed
    /// (`removed`), and listed files whose published size or a digest differs from the lock's
    /// (`changed`; another URL for the same content is not a change). Listing jobs that failed are left out (their failure says enough).
    package func drift(since lock: LockFile, original: Manifest) -> ListingDrift {
        var drift = ListingDrift()
        let listed = Dictionary(manifest.jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for job in original.jobs where job.listing != nil && failures[job.id] == nil {
            let prefix = job.id + "/"
            for fileJob in manifest.jobs where fileJob.id.hasPrefix(prefix) {
                guard let entry = lock.jobs[fileJob.id] else {
                    drift.added.append(fileJob)
                    continue
                }
                // Content, not place: a listing that moved to another revision (or a resolver that
                // signs its URLs) lists other URLs for the same bytes.
                let pinned = entry.allChecksums
                if let size = fileJob.size, size != entry.size {
                    drift.changed[fileJob.id] = "changed: listed with \(size) bytes, the lock says \(entry.size)"
                } else if let listed = fileJob.checksums.first(where: { listed in
                    pinned.contains { $0.algorithm == listed.algorithm && $0 != listed }
                }) {
                    let was = pinned.first { $0.algorithm == listed.algorithm }!
                    drift.changed[fileJob.id] = "changed: listed with \(listed), the lock says \(was)"
                }
            }
            for id in lock.jobs.keys where id.hasPrefix(prefix) && listed[id] == nil {
                drift.removed.insert(id)
            }
        }
        return drift
    }

    /// The job of one listed file: the listing job's settings, this file's URL, dest and size.
    private static func fileJob(_ job: Job, relative: String, url: String, size: Int64?, credentials: SourceCredentials) -> Job {
        var fileJob = job
        fileJob.listing = nil
        fileJob.id = job.id + "/" + relative
        fileJob.urls = [TemplatedString(literal: url)]
        let dest = job.dest.resolved + "/" + relative
        fileJob.dest = TemplatedString(literal: (try? DestPath.normalize(dest).get()) ?? dest)
        fileJob.size = size
        if let header = credentials.header(for: url) { fileJob.headers.append(header) }
        return fileJob
    }

    /// Why the relative path of a listed file cannot be placed under the listing job's `DIR`,
    /// or nil: every segment must be a name (no `..`, `.` or empty segment, no leading `/`),
    /// and the dest it makes must be a valid one inside `DIR`.
    static func placementProblem(_ relative: String, in job: Job) -> String? {
        let segments = relative.split(separator: "/", omittingEmptySubsequences: false)
        if relative.isEmpty || segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            return "would leave \(job.dest.redacted)/: its path has a '..', '.' or empty segment"
        }
        switch DestPath.normalize(job.dest.resolved + "/" + relative) {
        case .failure(let problem):
            return problem.message(key: "dest", shown: job.dest.redacted + "/" + relative)
        case .success(let path) where !path.hasPrefix(job.dest.resolved + "/"):
            return "would leave \(job.dest.redacted)/"
        case .success:
            return nil
        }
    }
}

/// What `check` finds when it lists a source or prefix again and compares with the lock.
package struct ListingDrift: Sendable {
    /// Files listed now that the lock does not pin: drift, "added".
    package var added: [Job] = []
    /// Pinned files no longer listed: missing.
    package var removed: Set<String> = []
    /// Pinned files listed with another size, digest or URL: drift, with what changed.
    package var changed: [String: String] = [:]
    /// Listing jobs that could not be listed again, by id: unreachable (their pinned files are
    /// still checked).
    package var unlisted: [String: BatchFetchError] = [:]

    package init() {}
}

/// A bucket prefix's objects, listed with ListObjectsV2, page by page (continuation tokens),
/// signed and retried as the job's requests are (Docs/ObjectStores.md, "Prefixes").
enum BucketPrefix {
    /// Listing pages are read whole into memory, at most this many bytes each (1,000 keys of
    /// S3's maximum length are about 1.3 MB of XML).
    static let pageLimit = 8 << 20

    /// Every object under the job's prefix, all pages, each with its key relative to the prefix
    /// (folder markers, keys ending with `/`, left out).
    static func list(_ job: Job, network: JobNetwork, hosts: HostLimiter)
        async -> Result<[(relative: String, file: ListedFile)], BatchFetchError> {
        guard let location = network.mirrors.first??.store else {
            return .failure(BatchFetchError(.connection, "invalid bucket URL \(job.url?.redacted ?? "")"))
        }
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        let scheme = job.url.flatMap { ObjectURL.store(of: $0.resolved) } ?? .s3
        var objects: [(relative: String, file: ListedFile)] = []
        var token: String?
        repeat {
            guard let url = location.listURL(continuation: token) else {
                return .failure(BatchFetchError(.connection, "cannot make the listing URL of \(job.url?.redacted ?? "")"))
            }
            switch await probe.fetch(mirror: 0, limit: pageLimit, url: url) {
            case .failure(let failure):
                return .failure(BatchFetchError(failure.code, "listing \(job.url?.redacted ?? ""): \(failure.message)"))
            case .success(let data):
                guard let page = BucketListing(xml: data) else {
                    return .failure(BatchFetchError(.httpStatus, "listing \(job.url?.redacted ?? ""): the answer is not a bucket listing"))
                }
                for object in page.objects {
                    let relative = String(object.key.dropFirst(location.key.count))
                    guard !relative.isEmpty, !relative.hasSuffix("/") else { continue }
                    let url = "\(scheme.rawValue)://\(location.bucket)/" + SigV4Signer.encode(object.key, keepSlash: true)
                    objects.append((relative, ListedFile(path: object.key, url: url, size: object.size, checksums: [])))
                }
                token = page.isTruncated ? page.nextContinuationToken : nil
                if page.isTruncated && token == nil {
                    return .failure(BatchFetchError(.httpStatus, "listing \(job.url?.redacted ?? ""): a truncated page without a continuation token"))
                }
            }
        } while token != nil
        return .success(objects)
    }
}
