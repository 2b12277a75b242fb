import BatchFetchSpec
import Foundation

/// `batchfetch verify`: checks every dest on disk against the manifest's size and checksums and
/// the lock, without any network. Every file is read and hashed (no state cache): this is the
/// check for files that changed behind batchfetch's back.
public final class Verifier: Sendable {
    public let manifest: Manifest
    public let lock: LockFile?
    public let options: RunOptions

    public init(manifest: Manifest, lock: LockFile?, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.lock = lock
        self.options = options
    }

    public func run() async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let jobs = manifest.jobs
        // Hashing is CPU-bound: one file per core.
        let results = await boundedMap(jobs.count, limit: ProcessInfo.processInfo.activeProcessorCount) { index in
            self.verify(jobs[index])
        }
        return RunReport.verdicts(command: .verify, manifest: manifest, options: options, results: results,
                                  startDate: startDate, started: started)
    }

    func verify(_ job: Job) -> JobResult {
        let started = DispatchTime.now()
        let path = job.destination(in: manifest.outputDirectory)
        var result = JobResult(id: job.id, status: .ok, dest: job.dest.redacted)
        defer { result.duration = DispatchTime.now().seconds(since: started) }
        guard let size = LocalFile.regularFileSize(atPath: path) else {
            result.status = .missing
            return result
        }
        result.size = size
        let entry = lock?.jobs[job.id]
        if let expected = job.size, expected != size {
            return drift(result, DownloadFailure(.sizeMismatch, "\(size) bytes, the manifest says \(expected)"))
        }
        if let entry, entry.size != size {
            return drift(result, DownloadFailure(.lockMismatch, "\(size) bytes, the lock says \(entry.size)"))
        }
        guard let (digests, _) = try? Digester.digests(ofFile: path, also: job.checksums.map(\.algorithm)) else {
            return drift(result, DownloadFailure(.ioError, "cannot read \(job.dest.redacted)"))
        }
        result.checksums = digests
        if let wrong = job.checksums.first(where: { digests[$0.algorithm.rawValue] != $0.hex }) {
            return drift(result, DownloadFailure(
                .checksumMismatch, "\(wrong.algorithm.rawValue) is \(digests[wrong.algorithm.rawValue] ?? "?"), the manifest says \(wrong.hex)"))
        }
        if let entry, digests["sha256"] != entry.sha256 {
            return drift(result, DownloadFailure(.lockMismatch, "sha256 is \(digests["sha256"] ?? "?"), the lock says \(entry.sha256)"))
        }
        result.checksumVerified = job.checksums.isEmpty && entry == nil ? nil : true
        return result
    }

    private func drift(_ result: JobResult, _ failure: DownloadFailure) -> JobResult {
        var result = result
        result.status = .drift
        result.failure = failure
        return result
    }
}
