import BatchFetchSpec
import Foundation

/// Turns each job whose URL is a bucket prefix (``Job/listing``) into one job per object under
/// it, before a run, pin or plan builds its graph (Docs/ObjectStores.md, "Prefixes"): the prefix
/// is listed with ListObjectsV2, page by page (continuation tokens), signed and retried as the
/// job's requests are; each object the globs keep becomes a job with the id `JOBID/` + its key
/// relative to the prefix, the URL `s3://bucket/key`, the dest `DIR/` + the relative key, the
/// size the listing gives, and every other setting of the prefix job. Jobs that depended on the
/// prefix job depend on all its objects. Keys that end with `/` (folder markers) are not objects.
///
/// A listing that fails leaves the prefix job in place, with its failure in ``failures``: the
/// run reports it failed (and skips its dependents) without asking anything more. A key whose
/// relative path would leave `DIR` (`..`, an absolute path) fails its own job the same way.
public struct PrefixExpansion: Sendable {
    public var manifest: Manifest
    /// Why each job could not be expanded or placed, by id.
    public var failures: [String: DownloadFailure] = [:]

    /// Listing pages are read whole into memory, at most this many bytes each (1,000 keys of
    /// S3's maximum length are about 1.3 MB of XML).
    static let pageLimit = 8 << 20

    /// `manifest` with its prefix jobs expanded; unchanged (and no request made) when it has none.
    public static func expand(_ manifest: Manifest, transport: any HTTPTransport, environment: [String: String]) async -> PrefixExpansion {
        var expansion = PrefixExpansion(manifest: manifest)
        guard manifest.jobs.contains(where: { $0.listing != nil }) else { return expansion }
        let hosts = HostLimiter(limit: manifest.perHost)
        var objects: [String: [Job]] = [:]
        for job in manifest.jobs {
            guard let listing = job.listing else { continue }
            let network = JobNetwork(job: job, transport: transport, perHost: manifest.perHost, environment: environment)
            switch await list(job, network: network, hosts: hosts) {
            case .failure(let failure):
                expansion.failures[job.id] = failure
            case .success(let (location, listed)):
                objects[job.id] = listed.compactMap { object in
                    let relative = String(object.key.dropFirst(location.key.count))
                    guard !relative.isEmpty, !relative.hasSuffix("/"), listing.keeps(relative) else { return nil }
                    let objectJob = self.objectJob(job, location: location, object: object, relative: relative)
                    if case .failure(let problem) = DestPath.normalize(job.dest.resolved + "/" + relative) {
                        expansion.failures[objectJob.id] = DownloadFailure(.unsafePath, "the key '\(object.key)' "
                            + problem.message(key: "dest", shown: job.dest.redacted + "/" + relative))
                    }
                    return objectJob
                }
            }
        }
        expansion.manifest = replacing(manifest, objects)
        return expansion
    }

    /// `manifest` with its prefix jobs expanded into the objects `lock` pinned for them (its
    /// entries whose id is the prefix job's id and `/`): `run --locked` fetches exactly the
    /// pinned listing, without listing again. No request is made.
    public static func expand(_ manifest: Manifest, lock: LockFile) -> PrefixExpansion {
        var objects: [String: [Job]] = [:]
        for job in manifest.jobs where job.listing != nil {
            objects[job.id] = lock.jobs.filter { $0.key.hasPrefix(job.id + "/") }.sorted { $0.key < $1.key }.map { id, entry in
                var objectJob = job
                objectJob.listing = nil
                objectJob.id = id
                objectJob.urls = entry.mirrors.prefix(1).map { TemplatedString(literal: $0.url) }
                objectJob.dest = TemplatedString(literal: entry.dest)
                objectJob.size = entry.size
                return objectJob
            }
        }
        return PrefixExpansion(manifest: objects.isEmpty ? manifest : replacing(manifest, objects))
    }

    /// `manifest` with each prefix job that `objects` has an entry for replaced, in place, by
    /// those jobs, and every job that depended on it depending on all of them.
    private static func replacing(_ manifest: Manifest, _ objects: [String: [Job]]) -> Manifest {
        var jobs: [Job] = []
        jobs.reserveCapacity(manifest.jobs.count + objects.values.reduce(0) { $0 + $1.count })
        for job in manifest.jobs { jobs += objects[job.id] ?? [job] }
        let ids = objects.mapValues { $0.map(\.id) }
        for index in jobs.indices where jobs[index].dependsOn.contains(where: { ids[$0] != nil }) {
            jobs[index].dependsOn = jobs[index].dependsOn.flatMap { ids[$0] ?? [$0] }
        }
        var replaced = manifest
        replaced.jobs = jobs
        return replaced
    }

    /// The objects this (network) expansion listed that `lock` does not pin: added since.
    public func added(since lock: LockFile, original: Manifest) -> [Job] {
        let prefixes = Set(original.jobs.filter { $0.listing != nil }.map(\.id))
        let known = Set(original.jobs.map(\.id))
        return manifest.jobs.filter { job in
            !known.contains(job.id) && lock.jobs[job.id] == nil
                && job.id.firstIndex(of: "/").map { prefixes.contains(String(job.id[..<$0])) } == true
        }
    }

    /// The job of one listed object: the prefix job's settings, this object's URL, dest and size.
    private static func objectJob(_ job: Job, location: ObjectLocation, object: BucketListing.Object, relative: String) -> Job {
        var objectJob = job
        objectJob.listing = nil
        objectJob.id = job.id + "/" + relative
        let scheme = job.url.map { String($0.resolved.prefix(2)).lowercased() } ?? "s3"
        objectJob.urls = [TemplatedString(literal: "\(scheme)://\(location.bucket)/" + SigV4Signer.encode(object.key, keepSlash: true))]
        let dest = job.dest.resolved + "/" + relative
        objectJob.dest = TemplatedString(literal: (try? DestPath.normalize(dest).get()) ?? dest)
        objectJob.size = object.size
        return objectJob
    }

    /// Every object under the job's prefix, all pages.
    private static func list(_ job: Job, network: JobNetwork, hosts: HostLimiter)
        async -> Result<(ObjectLocation, [BucketListing.Object]), DownloadFailure> {
        guard let location = network.mirrors.first??.store else {
            return .failure(DownloadFailure(.connection, "invalid bucket URL \(job.url?.redacted ?? "")"))
        }
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        var objects: [BucketListing.Object] = []
        var token: String?
        repeat {
            guard let url = location.listURL(continuation: token) else {
                return .failure(DownloadFailure(.connection, "cannot make the listing URL of \(job.url?.redacted ?? "")"))
            }
            switch await probe.fetch(mirror: 0, limit: pageLimit, url: url) {
            case .failure(let failure):
                return .failure(DownloadFailure(failure.code, "listing \(job.url?.redacted ?? ""): \(failure.message)"))
            case .success(let data):
                guard let page = BucketListing(xml: data) else {
                    return .failure(DownloadFailure(.httpStatus, "listing \(job.url?.redacted ?? ""): the answer is not a bucket listing"))
                }
                objects += page.objects
                token = page.isTruncated ? page.nextContinuationToken : nil
                if page.isTruncated && token == nil {
                    return .failure(DownloadFailure(.httpStatus, "listing \(job.url?.redacted ?? ""): a truncated page without a continuation token"))
                }
            }
        } while token != nil
        return .success((location, objects))
    }
}
