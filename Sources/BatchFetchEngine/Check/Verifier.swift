import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// `batchfetch verify`: checks every dest on disk against the manifest's size and checksums and
/// the lock, without any network. Every file is read and hashed (no state cache): this is the
/// check for files that changed behind batchfetch's back.
package final class Verifier: Sendable {
    package let manifest: Manifest
    package let lock: LockFile?
    package let options: RunOptions

    package init(manifest: Manifest, lock: LockFile?, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.lock = lock
        self.options = options
    }

    package func run() async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let jobs = manifest.downloads.jobs
        // No output directory: every file is missing.
        let root = try? SafeDirectory.root(manifest.outputDirectory, create: false)
        // The trees `extract:` made, as the runs recorded them (nothing else is read from it).
        let state = jobs.contains { $0.extract != nil } ? root.map { StateCache(directory: $0, readOnly: true, dests: []) } : nil
        // Hashing is CPU-bound: one file per core.
        let results = await boundedMap(jobs.count, limit: ProcessInfo.processInfo.activeProcessorCount) { index in
            if let failure = self.options.unexpanded[jobs[index].id] {
                // A source or prefix with no lockfile to say what its files are; or a file
                // whose listed path could not be placed.
                var result = JobResult(id: jobs[index].id, status: .missing, dest: jobs[index].dest.redacted)
                result.failure = failure
                return result
            }
            var result = self.verify(jobs[index], root: root)
            if let extract = jobs[index].extract, let root, let state {
                Self.verifyTree(extract, of: jobs[index], root: root, state: state, into: &result)
            }
            return result
        }
        return RunReport(command: .verify, manifest: manifest, options: options, startDate: startDate, started: started,
                         jobs: ReportJobs(results.map(RunReport.Job.init)), interrupted: false)
    }

    /// The manifest's expectations, then the lock's: the same check as a run's up-to-date test,
    /// with every file hashed.
    func verify(_ job: Job, root: SafeDirectory?) -> JobResult {
        let started = DispatchTime.now()
        var result = JobResult(id: job.id, status: .ok, dest: job.dest.redacted)
        defer { result.duration = DispatchTime.now().seconds(since: started) }
        let entry = lock?.jobs[job.id]
        let expectations = [ContentExpectation(job: job)] + (entry.map { [ContentExpectation(lock: $0)] } ?? [])
        switch root.map({ DestinationCheck(job: job, root: $0, state: nil).inspect(against: expectations) }) ?? .missing {
        case .missing:
            result.status = .missing
        case .unreadable(let size, let failure):
            result.size = size
            drift(&result, failure)
        case .differs(let size, let digests, let failure):
            result.size = size
            result.checksums = digests ?? [:]
            drift(&result, failure)
        case .matches(let size, let digests):
            result.size = size
            result.checksums = digests
            result.checksumVerified = job.checksums.isEmpty && entry == nil ? nil : true
        }
        return result
    }

    /// An `extract:` job's tree against what the run that unpacked it recorded, by identity —
    /// one `lstat` per entry, inode, size, mtime and ctime, which any write changes: the tree
    /// must be the one unpacked from the archive that is there (or, with `keep_archive: false`
    /// and the archive gone, from the one the job pins or last fetched), whole. Drift names
    /// the entries that differ.
    static func verifyTree(_ extract: Extract, of job: Job, root: SafeDirectory, state: StateCache, into result: inout JobResult) {
        let into = extract.into.resolved
        let archiveGone = result.status == .missing && !extract.keepArchive
        guard result.status == .ok || archiveGone else { return }
        guard let tree = state.tree(at: into), tree.settings == extract.settingsKey else {
            result.status = archiveGone ? .missing : .drift
            if !archiveGone {
                result.failure = BatchFetchError(.checksumUnavailable, "no tree unpacked from it is recorded at \(extract.into.redacted); "
                    + "batchfetch run unpacks it")
            }
            return
        }
        let pinned = archiveGone ? job.checksums.first { $0.algorithm == .sha256 }?.hex : result.checksums["sha256"]
        if let pinned, pinned != tree.archiveSHA256 {
            result.status = .drift
            result.failure = BatchFetchError(.checksumMismatch, "the tree at \(extract.into.redacted) was unpacked from another archive "
                + "(sha256 \(tree.archiveSHA256.prefix(12))…)")
            return
        }
        let differing = tree.differences(in: root, into: into, state: state)
        let extraction = Extraction(into: extract.into.redacted, format: tree.format, files: tree.files, bytes: tree.bytes)
        result.extracted = extraction
        if archiveGone {
            result.status = .ok
            result.checksums = ["sha256": tree.archiveSHA256]
        }
        guard differing.count > 0 else { return }
        let named = differing.named.map { "\($0.path.isEmpty ? extract.into.redacted : $0.path) \($0.why)" }.joined(separator: ", ")
        let more = differing.count - differing.named.count
        result.status = .drift
        result.failure = BatchFetchError(.checksumMismatch, "the tree at \(extract.into.redacted) differs from what its archive unpacked to: "
            + named + (more > 0 ? " and \(more) more" : "") + " (\(differing.count) entr\(differing.count == 1 ? "y" : "ies"))")
    }

    private func drift(_ result: inout JobResult, _ failure: BatchFetchError) {
        result.status = .drift
        result.failure = failure
    }
}
