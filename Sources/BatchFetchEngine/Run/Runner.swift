import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
#if os(Linux)
import CBatchFetchSystem
#endif
import Foundation

/// Runs a validated manifest: jobs start when their dependencies have succeeded, at most
/// `concurrency` at a time; dependents of a failed job are skipped. Produces the report (the
/// caller writes it) and a stream of events (``start()``).
public final class Runner: Sendable {

    public let manifest: Manifest
    public let options: RunOptions
    private let graph: JobGraph

    public init(manifest: Manifest, options: RunOptions = RunOptions()) {
        self.manifest = manifest
        self.options = options
        graph = JobGraph(manifest: manifest)
    }

    /// The default report location: `<output_dir>/batchfetch-report.json`, or a shard's own
    /// (`batchfetch-report.shard-K-of-N.json`).
    public var defaultReportPath: String { manifest.toolFile(options.shard.toolFile(ToolFiles.runReport)) }

    /// Starts the run in a task of its own and returns its handle: events, interrupt, report.
    public func start() -> RunHandle {
        let (events, continuation) = AsyncStream.makeStream(of: RunEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let interruption = Interruption()
        let transport = options.httpTransport(perHost: manifest.perHost)
        // The scheduler on the first of the transport's executors, when it has any: a small job
        // finishing there hands its result over without waking another thread.
        let executor = transport.jobExecutors.first
        let task = Task(executorPreference: executor) {
            let report = await self.execute(transport: transport, interruption: interruption) { continuation.yield($0) }
            continuation.yield(.runFinished(report))
            continuation.finish()
            return report
        }
        return RunHandle(events: events, executor: executor, task: task, interruption: interruption)
    }

    /// Runs every job and returns the report.
    public func run() async -> RunReport {
        await start().report
    }

    /// What `run --dry-run` reports for one job.
    package struct DryRunEntry: Sendable {
        package var id: String
        package var dest: String
        /// The first mirror (redacted).
        package var url: String
        /// `dest` already matches the manifest's size and checksums (checked locally).
        package var upToDate: Bool
        /// An upload job: `dest` is the file it would send to `url` (whether the target has it
        /// takes a request, which a dry run does not make).
        package var isUpload = false
        /// Not up to date, and the content cache holds the job's pinned sha256 as verified: it
        /// would be published from there without a request.
        package var fromCache = false
    }

    /// What a run would do, in plan order, without any network access: which jobs are already up
    /// to date (the same local check a run makes) and which would be fetched.
    package func dryRun() -> [DryRunEntry] {
        let root = try? SafeDirectory.root(manifest.outputDirectory, create: false)
        let state = root.map { stateCache($0, readOnly: true) }
        let cache = options.cache.map { ContentCache(lookingAt: $0) }
        return graph.order.map { index in
            let job = manifest.jobs[index]
            let upToDate: Bool
            if job.isUpload {
                upToDate = false
            } else if let root, case .upToDate = DestinationCheck(job: job, root: root, state: state).verdict() {
                upToDate = true
            } else {
                upToDate = false
            }
            var entry = DryRunEntry(id: job.id, dest: job.dest.redacted, url: job.url?.redacted ?? "", upToDate: upToDate,
                                    isUpload: job.isUpload)
            entry.fromCache = !upToDate && cache?.serves(job, locked: options.lock?.jobs[job.id]?.sha256) == true
            return entry
        }
    }

    /// The state cache: the whole manifest's, or a shard's own file, which starts from the
    /// whole manifest's entries for the shard's jobs so that splitting a manifest that was run
    /// whole costs no re-hashing (and shards sharing `output_dir` never write one file).
    private func stateCache(_ root: SafeDirectory, readOnly: Bool = false) -> StateCache {
        let dests = manifest.jobs.map(\.dest.resolved)
        guard let shard = options.shard else { return StateCache(directory: root, readOnly: readOnly, dests: dests) }
        return StateCache(directory: root, fileName: shard.shard.fileName(ToolFiles.stateStore),
                          legacyFileName: shard.shard.fileName(ToolFiles.stateCache),
                          seed: StateCache.Seed(dests: Set(dests)), readOnly: readOnly, dests: dests)
    }

    private func context(root: SafeDirectory, transport: any HTTPTransport, interruption: Interruption,
                         state: StateCache) -> JobDownloader.Context {
        JobDownloader.Context(
            root: root, transport: transport, hosts: HostLimiter(limit: manifest.perHost),
            rateLimiter: RateLimiter(limit: RunRateLimit(fixed: manifest.rateLimit, timetable: options.bandwidth ?? manifest.bandwidth),
                                     time: options.time, date: options.date),
            durability: options.durability,
            memoryCap: options.memoryCapPerJob, writeSize: options.writeSize, simulatedDiskRate: options.simulatedDiskRate,
            segmentRangeSize: options.segmentRangeSize, hedging: options.hedges,
            interruption: interruption, state: state,
            listings: DirectoryListings(limit: 4 * manifest.jobs.count + 1024), perHost: manifest.perHost,
            environment: options.environment)
    }

    private func execute(transport: any HTTPTransport, interruption: Interruption,
                         emit: @escaping @Sendable (RunEvent) -> Void) async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
        let budget = BudgetWatch(options.budget ?? manifest.budget, time: options.time, interruption: interruption)
        defer { budget.finish() }
        let active = ActiveJobs(jobs: manifest.jobs, started: started)
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(options.progressInterval * 1e9))
                if let snapshot = active.snapshot() { emit(.progress(snapshot)) }
            }
        }
        let root: SafeDirectory
        do {
            root = try SafeDirectory.root(manifest.outputDirectory, create: true)
        } catch {
            // Nothing can be written: every job fails with the reason (say, permission_denied).
            ticker.cancel()
            let results = manifest.jobs.map { JobResult(failed: $0, error) }
            for result in results { emit(.jobFinished(result)) }
            return RunReport.ofRun(manifest: manifest, options: options, results: results, interrupted: false,
                                   startDate: startDate, started: started)
        }
        let state = stateCache(root)
        for warning in state.warnings { emit(.warning(warning)) }
        var context = context(root: root, transport: transport, interruption: interruption, state: state)
        context.cache = options.cache.map { ContentCache(path: $0, warn: { emit(.warning($0)) }) }
        context.hashMirrors = manifest.hashMirrors
        context.cacheLink = manifest.cacheLink
        defer { context.cache?.recordUses() }
        var journal = await schedule(
            context: context, active: active,
            interruption: interruption, budget: budget,
            emit: emit)
        ticker.cancel()
        // The state store's last batch is written while the file system syncs: the sync waits on
        // the disk and the kernel's flusher threads, the batch on this thread. The store need not
        // be in the sync: rows lost in a crash cost the next run a hash of each of their files.
        if options.durability == .batch {
            await Self.syncFileSystem(of: manifest.outputDirectory, meanwhile: state.save)
        } else {
            state.save()
        }
        return RunReport(command: .run, manifest: manifest, options: options, startDate: startDate, started: started,
                         jobs: ReportJobs(journal: journal.finished()), summary: journal.summary,
                         interrupted: interruption.isInterrupted && budget.cut == nil)
    }

    /// Executes ``RunSchedule``'s actions: starts each job's task (on the executor it names),
    /// records skips and deferrals, and feeds every finish back, telling the schedule first when
    /// the budget is spent. A job a hard cutoff interrupted is `deferred`, not `interrupted`.
    private func schedule(context: JobDownloader.Context, active: ActiveJobs, interruption: Interruption,
                          budget: BudgetWatch, emit: @escaping @Sendable (RunEvent) -> Void) async -> ReportJournal {
        let jobs = manifest.jobs
        var journal = ReportJournal(count: jobs.count, directory: context.root)
        let indexByID = graph.indexByID
        let outputDirectory = manifest.outputDirectory
        /// The job whose published sum file a job's `checksums_from` names.
        let sumFileJob = { (index: Int) in jobs[index].checksumsFrom.flatMap { indexByID[$0] } }
        /// That sum file, made when the job starts (a table of them for a million jobs would hold
        /// a million `Job` copies).
        let sumFile = { (index: Int) in
            sumFileJob(index).map { (job: jobs[$0], path: jobs[$0].destination(in: outputDirectory)) }
        }
        /// What the signed checksum files of this run verified, by job index: who signed, and a
        /// clear-signed file's signed text; and the failures of those that did not verify, which
        /// the jobs taking digests from them fail with (Docs/Signatures.md).
        var signed: [Int: (signer: Signer, text: String?)] = [:]
        var unsigned: [Int: BatchFetchError] = [:]
        let executors = context.transport.jobExecutors
        let options = options
        var schedule = RunSchedule(
            graph: graph, limit: options.concurrency ?? manifest.concurrency, failFast: options.failFast,
            executors: executors.count,
            mayRunOnExecutor: { index, copying in
                Self.runsOnExecutor(jobs[index], options: options, copying: copying, sumFile: sumFileJob(index) != nil)
            })
        await withTaskGroup(of: (Int, JobResult, ReportJournal.Encoded).self) { group in
            func perform(_ actions: [RunSchedule.Action]) {
                for action in actions {
                    switch action {
                    case .start(let index, let source, let executor):
                        start(index, copyFrom: source, on: executor.map { executors[$0] })
                    case .skip(let index, let reason):
                        var result = JobResult(id: jobs[index].id, status: .skipped, dest: jobs[index].dest.redacted)
                        result.skippedBecause = reason
                        if let sumIndex = sumFileJob(index), let failure = unsigned[sumIndex] {
                            // Its digests would have come from a file whose signature failed.
                            result = JobResult(failed: jobs[index], BatchFetchError(
                                .signatureInvalid, "the checksum file of '\(jobs[sumIndex].id)' is not trusted: \(failure.message)"))
                        }
                        notRun(result, index)
                    case .postpone(let index, let reason):
                        var result = JobResult(id: jobs[index].id, status: .deferred, dest: jobs[index].dest.redacted)
                        result.deferredBecause = reason
                        notRun(result, index)
                    case .defer:
                        break  // started again when its twin finishes
                    }
                }
            }
            func notRun(_ result: JobResult, _ index: Int) {
                var result = result
                result.isUpload = jobs[index].isUpload
                journal.record(ReportJournal.Encoded(RunReport.Job(result), listing: options.reportJobs), at: index)
                active.skipped(expected: jobs[index].size)
                emit(.jobFinished(result))
            }
            /// Tells the schedule the budget is spent, once it is, before it starts anything.
            func checkBudget() {
                if let spent = budget.check() { schedule.spend(spent) }
            }
            func start(_ index: Int, copyFrom source: SameContent.Source?, on executor: (any TaskExecutor)?) {
                let job = jobs[index]
                let progress = JobProgress(total: job.size, run: budget.bytes)
                let startedAfter = active.add(index, id: job.id, progress: progress, expected: job.size)
                emit(.jobStarted(id: job.id, dest: job.dest.redacted, url: job.url?.redacted ?? ""))
                let sumFile = sumFile(index)
                let signedSums = sumFileJob(index).flatMap { signed[$0] }
                let onLoop = executor != nil
                group.addTask(executorPreference: executor) {
                    var result: JobResult
                    if job.isUpload {
                        result = await JobUploader(job: job, context: context, progress: progress).run()
                    } else {
                        switch self.prepared(job, sumFile: sumFile, signedText: signedSums?.text) {
                        case .success(let prepared):
                            var downloader = JobDownloader(job: prepared, context: context, progress: progress,
                                                           copyFrom: source, locked: options.lock != nil)
                            if onLoop, !downloader.startsSmall {
                                // Too much on disk already to hash or resume on a loop.
                                result = await withTaskExecutorPreference(globalConcurrentExecutor) { await downloader.run() }
                            } else {
                                result = await downloader.run()
                            }
                        case .failure(let failure):
                            result = JobResult(failed: job, failure)
                        }
                    }
                    result.startedAfter = startedAfter
                    result.checksumsSignedBy = signedSums?.signer
                    if result.status == .interrupted, let cut = budget.cut {
                        result.status = .deferred
                        result.deferredBecause = cut
                        result.failure = nil
                    }
                    return (index, result, ReportJournal.Encoded(RunReport.Job(result), listing: options.reportJobs))
                }
            }
            /// Interrupted by a signal, not by a hard cutoff.
            var signalled: Bool { interruption.isInterrupted && budget.cut == nil }
            checkBudget()
            perform(schedule.begin(interrupted: signalled))
            while let (index, result, entry) = await group.next() {
                if let signer = result.signedBy { signed[index] = (signer, result.signedText) }
                if let failure = result.failure, failure.code == .signatureInvalid, jobs[index].signature != nil {
                    unsigned[index] = failure
                }
                active.finished(index, result)
                journal.record(entry, at: index)
                for warning in result.warnings { emit(.warning("job '\(result.id)': \(warning)")) }
                emit(.jobFinished(result))
                checkBudget()
                perform(schedule.finished(index, succeeded: result.status.succeeded, deferred: result.status == .deferred,
                                          interrupted: signalled))
            }
            perform(schedule.end())
        }
        return journal
    }

    /// Whether a job may run on one of the transport's executors (event loops, which must never
    /// wait long): a download of a known size (the manifest's, or with `--locked` the lock's) of
    /// at most ``EventLoopTaskExecutor/smallJobLimit``, so that hashing an existing `dest` or
    /// writing the body takes well under a millisecond, or of unknown size — most of a batch
    /// without sizes are small files; such a job moves to the pool when a large `dest` or
    /// partial is on disk (``JobDownloader/startsSmall``), a large body is written on its
    /// sink's own queue, and segments and reading back a part run on the pool
    /// (``JobDownloader``). No archive to unpack, no twin's file to copy, no sum file to read, no `fsync` per file, no
    /// simulated slow disk. Every other job runs on the cooperative pool.
    static func runsOnExecutor(_ job: Job, options: RunOptions, copying: Bool, sumFile: Bool) -> Bool {
        if let size = job.size ?? options.lock?.jobs[job.id]?.size, size > EventLoopTaskExecutor.smallJobLimit { return false }
        return !job.isUpload && job.extract == nil && job.signature == nil && !copying && !sumFile && options.durability != .strict
            && options.simulatedDiskRate == nil
    }

    /// The job as it runs: held to its lockfile entry (`run --locked`), and given the digests its
    /// `checksums_from` sum file lists (that job is a dependency, so the file is there; of a
    /// clear-signed one only `signedText`, the part its signature covers).
    private func prepared(_ job: Job, sumFile: (job: Job, path: String)?, signedText: String?) -> Result<Job, BatchFetchError> {
        if let failure = options.unexpanded[job.id] { return .failure(failure) }
        var result = Result<Job, BatchFetchError>.success(job)
        if let entry = options.lock?.jobs[job.id] { result = result.flatMap { $0.locked(by: entry) } }
        if let sumFile {
            if let signedText {
                result = result.flatMap { $0.withChecksums(from: SumFile(text: signedText), of: sumFile.job) }
            } else {
                result = result.flatMap { $0.withChecksums(fromSumFileAt: sumFile.path, of: sumFile.job) }
            }
        }
        return result
    }

    static func fileSHA256(_ path: String) -> String {
        (try? Digester.digests(ofFile: path).digests["sha256"]) ?? Digester().finalize()["sha256"]!
    }

    /// One `syncfs` for everything published in the run (durability `batch`), made on a thread
    /// of its own while `work` runs on the caller's: the call blocks for as long as the disk
    /// takes, which a thread of the cooperative pool or an event loop must not. The thread is
    /// started before `work` (a child task would wait for the caller's executor, busy with
    /// `work`).
    static func syncFileSystem(of directory: String, meanwhile work: () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if descriptor >= 0 {
                    #if os(Linux)
                    _ = batchfetch_syncfs(descriptor)
                    #else
                    fsync(descriptor)
                    sync()
                    #endif
                    close(descriptor)
                }
                done.resume()
            }.start()
            work()
        }
    }
}

