import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// `batchfetch pin`: makes every job's content present and verified (a normal run: files already
/// verified are reused, the rest downloaded), then asks each mirror for its size and validators,
/// and returns the lockfile — or none when a job failed, so a lock never records a guess.
package final class Pinner: Sendable {
    package let manifest: Manifest
    package let options: RunOptions
    /// `pin --pieces SIZE`: record the sha256 of each piece of this length (Docs/Mirrors.md).
    package let pieceLength: Int64?

    /// Upload jobs are left out: a lockfile pins what is fetched. (One a download depends on
    /// still runs, as its dependency.)
    package init(manifest: Manifest, options: RunOptions = RunOptions(), pieceLength: Int64? = nil) {
        self.pieceLength = pieceLength
        self.manifest = (try? manifest.selecting(manifest.downloads.jobs.map(\.id)).get()) ?? manifest.downloads
        self.options = options
    }

    /// The lockfile (nil if any job did not succeed), and the run's report. `handle` sees the
    /// run's events, for progress.
    package func run(handle: (RunHandle) async -> Void = { _ in }) async -> (LockFile?, RunReport) {
        var runOptions = options
        runOptions.lock = nil
        let run = Runner(manifest: manifest, options: runOptions).start()
        await handle(run)
        let report = await run.report
        guard report.status == .succeeded else { return (nil, report) }
        return (await lock(from: report), report)
    }

    /// Why `report` cannot be pinned from (empty when it can): it must be a `run` report of this
    /// manifest (`sha256` is the manifest file's) in which every job succeeded. This is how a
    /// sharded team pins: the shards' reports, merged, hold every job's verified size and sha256,
    /// so no machine has to hold the whole dataset (Docs/Contracts.md §7).
    package func problems(pinning report: RunReport) -> [String] {
        let current = RunReport.ManifestInfo(manifest, sha256: options.manifestSHA256)
        guard report.command == .run else { return ["it is a \(report.command.rawValue) report, not a run report"] }
        guard report.manifest.sha256 == current.sha256 else {
            return ["it is for another manifest (sha256 \(report.manifest.sha256.prefix(12))…, this one is \(current.sha256.prefix(12))…)"]
        }
        guard report.manifest.identity == current.identity else {
            return ["it is for other job lists than the manifest's now: " + report.manifest.listChanges(to: current)]
        }
        if let listed = report.jobsReported {
            return ["it lists only the \(listed.rawValue) jobs (--report-jobs \(listed.rawValue)): pin from a report of every job"]
        }
        if let scope = report.shard, scope.shard.count > 1 {
            return ["it covers shard \(scope.shard) only: give every shard's report, or their merge-reports"]
        }
        let byID = Dictionary(report.jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        for job in manifest.jobs where !job.isUpload {
            guard let result = byID[job.id] else {
                problems.append("job '\(job.id)' is not in it")
                continue
            }
            if result.status != .downloaded && result.status != .upToDate {
                problems.append("job '\(job.id)' is \(result.status.rawValue) in it")
            } else if result.checksums?["sha256"] == nil || result.size == nil {
                problems.append("job '\(job.id)' has no verified size and sha256 in it")
            }
        }
        return problems
    }

    /// The lockfile from a run report in which every job succeeded (the run's own, or merged
    /// shard reports): each job's verified size and sha256 from the report, and each mirror
    /// asked for its size and validators. Nil when a job is missing from the report or failed.
    package func lock(from report: RunReport) async -> LockFile? {
        let transport = options.httpTransport(perHost: manifest.perHost)
        let hosts = HostLimiter(limit: manifest.perHost)
        let jobs = manifest.downloads.jobs
        let byID = Dictionary(report.jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let found = await boundedMap(jobs.count, limit: options.concurrency ?? manifest.concurrency) { index in
            guard let result = byID[jobs[index].id] else { return nil as LockFile.Entry? }
            guard var entry = await Self.entry(jobs[index], result, network: JobNetwork(
                job: jobs[index], transport: transport, perHost: self.manifest.perHost, environment: self.options.environment),
                hosts: hosts) else { return nil }
            if let length = self.pieceLength {
                // From the published file, which must still be the verified one.
                let path = jobs[index].destination(in: self.manifest.outputDirectory)
                guard let (pieces, sha256) = try? Self.pieces(ofFile: path, length: length), sha256 == entry.sha256 else { return nil }
                entry.pieces = pieces
            }
            return entry
        }
        var entries: [String: LockFile.Entry] = [:]
        for (job, entry) in zip(jobs, found) { entries[job.id] = entry }
        guard entries.count == jobs.count else { return nil }
        return LockFile(manifest: (manifest.path as NSString).lastPathComponent, jobs: entries)
    }

    /// The sha256 of each `length`-byte piece of the file at `path`, and of the whole file (each
    /// piece is read once and fed to both).
    static func pieces(ofFile path: String, length: Int64) throws -> (PieceHashes, String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let size = Int64(info.st_size)
        let pieces = PieceHashes(length: length, sha256: [])
        var whole = Digester()
        var hashes: [String] = []
        for index in 0..<pieces.count(for: size) {
            let bytes = pieces.range(of: index, total: size)
            var piece = Digester()
            try piece.feed(descriptor: descriptor, from: bytes.lowerBound, upTo: bytes.upperBound) { whole.update($0) }
            hashes.append(piece.finalize()["sha256"]!)
        }
        return (PieceHashes(length: length, sha256: hashes), whole.finalize()["sha256"]!)
    }

    private static func entry(_ job: Job, _ result: RunReport.Job, network: JobNetwork, hosts: HostLimiter) async
        -> LockFile.Entry? {
        guard result.status == .downloaded || result.status == .upToDate,
              let sha256 = result.checksums?["sha256"], let size = result.size else { return nil }
        let probe = MirrorProbe(job: job, network: network, hosts: hosts)
        let redact = network.redactor.redact
        var mirrors: [LockFile.Mirror] = []
        for (index, url) in job.urls.enumerated() {
            let seen = await probe.observe(mirror: index, deep: false)
            let answered = seen.outcome == .answered
            // A mirror's own sha256 only as it announced it (Repr-Digest): which mirror served the
            // bytes depends on the run, and the lockfile must not.
            mirrors.append(LockFile.Mirror(
                url: url.redacted, size: answered ? seen.size : nil, etag: answered ? seen.etag.map(redact) : nil,
                lastModified: answered ? seen.lastModified.map(redact) : nil, sha256: answered ? seen.sha256 : nil))
        }
        let others = Dictionary(job.checksums.filter { $0.algorithm != .sha256 }.map { ($0.algorithm.rawValue, $0.hex) },
                                uniquingKeysWith: { first, _ in first })
        return LockFile.Entry(dest: job.dest.redacted, size: size, sha256: sha256, mirrors: mirrors, checksums: others.isEmpty ? nil : others,
                              signedBy: result.signedBy)
    }
}
