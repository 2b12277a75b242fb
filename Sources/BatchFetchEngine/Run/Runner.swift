import BatchFetchSpec
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
    public struct DryRunEntry: Sendable {
        public var id: String
        public var dest: String
        /// The first mirror (redacted).
        public var url: String
        /// `dest` already matches the manifest's size and checksums (checked locally).
        public var upToDate: Bool
        /// An upload job: `dest` is the file it would send to `url` (whether the target has it
        /// takes a request, which a dry run does not make).
        public var isUpload = false
        /// Not up to date, and the content cache holds the job's pinned sha256 as verified: it
        /// would be published from there without a request.
        public var fromCache = false
    }

    /// What a run would do, in plan order, without any network access: which jobs are already up
    /// to date (the same local check a run makes) and which would be fetched.
    public func dryRun() -> [DryRunEntry] {
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
            rateLimiter: manifest.rateLimit.map(RateLimiter.init(bytesPerSecond:)), durability: options.durability,
            memoryCap: options.memoryCapPerJob, writeSize: options.writeSize, simulatedDiskRate: options.simulatedDiskRate,
            segmentRangeSize: options.segmentRangeSize,
            interruption: interruption, state: state,
            listings: DirectoryListings(limit: 4 * manifest.jobs.count + 1024), perHost: manifest.perHost,
            environment: options.environment)
    }

    private func execute(transport: any HTTPTransport, interruption: Interruption,
                         emit: @escaping @Sendable (RunEvent) -> Void) async -> RunReport {
        let startDate = Date()
        let started = DispatchTime.now()
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
            interruption: interruption,
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
                         interrupted: interruption.isInterrupted)
    }

    private func schedule(context: JobDownloader.Context, active: ActiveJobs, interruption: Interruption,
                          emit: @escaping @Sendable (RunEvent) -> Void) async -> ReportJournal {
        let jobs = manifest.jobs
        var journal = ReportJournal(count: jobs.count, directory: context.root)
        var waitingOn = graph.dependencies.map(\.count)
        var rank = [Int](repeating: 0, count: jobs.count)
        for (position, job) in graph.order.enumerated() { rank[job] = position }
        var ready = JobQueue()
        for job in graph.order where waitingOn[job] == 0 { ready.push(job, rank: rank[job]) }
        let limit = max(1, options.concurrency ?? manifest.concurrency)
        var sameContent = SameContent(jobs: jobs)
        let indexByID = graph.indexByID
        /// Why no more jobs start (interrupt or --fail-fast), once that happens.
        var stopReason: String?

        let executors = context.transport.jobExecutors
        /// Small jobs running on each of the transport's executors, and where each one runs.
        var runningOn = [Int](repeating: 0, count: executors.count)
        var placed: [Int: Int] = [:]
        await withTaskGroup(of: (Int, JobResult, ReportJournal.Encoded).self) { group in
            var running = 0
            func launch() {
                if stopReason == nil, interruption.isInterrupted { stopReason = "the run was interrupted" }
                while stopReason == nil, running < limit, let next = ready.pop() {
                    let job = jobs[next]
                    guard case .start(let source) = sameContent.claim(next) else { continue }  // waits for its twin
                    let progress = JobProgress(total: job.size)
                    let startedAfter = active.add(next, id: job.id, progress: progress, expected: job.size)
                    emit(.jobStarted(id: job.id, dest: job.dest.redacted, url: job.url?.redacted ?? ""))
                    let sumFile = job.checksumsFrom.flatMap { indexByID[$0] }
                        .map { (job: jobs[$0], path: jobs[$0].destination(in: manifest.outputDirectory)) }
                    var executor: (any TaskExecutor)?
                    if Self.runsOnExecutor(job, options: options, copying: source != nil, sumFile: sumFile != nil),
                       let least = runningOn.indices.min(by: { runningOn[$0] < runningOn[$1] }) {
                        runningOn[least] += 1
                        placed[next] = least
                        executor = executors[least]
                    }
                    let onLoop = executor != nil
                    group.addTask(executorPreference: executor) {
                        var result: JobResult
                        if job.isUpload {
                            result = await JobUploader(job: job, context: context, progress: progress).run()
                        } else {
                            switch self.prepared(job, sumFile: sumFile) {
                            case .success(let prepared):
                                var downloader = JobDownloader(job: prepared, context: context, progress: progress,
                                                               copyFrom: source, locked: self.options.lock != nil)
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
                        return (next, result, ReportJournal.Encoded(RunReport.Job(result), listing: self.options.reportJobs))
                    }
                    running += 1
                }
            }
            launch()
            while let (index, result, entry) = await group.next() {
                running -= 1
                if let executor = placed.removeValue(forKey: index) { runningOn[executor] -= 1 }
                active.finished(index, result)
                journal.record(entry, at: index)
                emit(.jobFinished(result))
                let succeeded = result.status.succeeded
                for twin in sameContent.finished(index, succeeded: succeeded) {
                    ready.push(twin, rank: rank[twin])
                }
                for dependent in graph.dependents[index] where !journal.contains(dependent) {
                    if succeeded {
                        waitingOn[dependent] -= 1
                        if waitingOn[dependent] == 0 { ready.push(dependent, rank: rank[dependent]) }
                    } else {
                        // A job that ran and did not succeed failed (or was interrupted); skipped
                        // jobs never run, `skip` reports their dependents.
                        skip(dependent, because: "dependency '\(jobs[index].id)' failed", journal: &journal, active: active, emit: emit)
                    }
                }
                if !succeeded, options.failFast, stopReason == nil {
                    stopReason = "not started: --fail-fast after '\(jobs[index].id)' failed"
                }
                launch()
            }
        }
        // Jobs never started: their dependencies never finished, or the run stopped early (in
        // plan order; then any job outside the order, which only a manifest with a cycle has).
        for index in graph.order + jobs.indices where !journal.contains(index) {
            skip(index, because: stopReason ?? "not started", journal: &journal, active: active, emit: emit)
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
        return !job.isUpload && job.extract == nil && !copying && !sumFile && options.durability != .strict
            && options.simulatedDiskRate == nil
    }

    /// The job as it runs: held to its lockfile entry (`run --locked`), and given the digests its
    /// `checksums_from` sum file lists (that job is a dependency, so the file is there).
    private func prepared(_ job: Job, sumFile: (job: Job, path: String)?) -> Result<Job, BatchFetchError> {
        if let failure = options.unexpanded[job.id] { return .failure(failure) }
        var result = Result<Job, BatchFetchError>.success(job)
        if let entry = options.lock?.jobs[job.id] { result = result.flatMap { $0.locked(by: entry) } }
        if let sumFile { result = result.flatMap { $0.withChecksums(fromSumFileAt: sumFile.path, of: sumFile.job) } }
        return result
    }

    /// Marks a job and everything that depends on it as skipped.
    private func skip(_ index: Int, because reason: String, journal: inout ReportJournal, active: ActiveJobs,
                      emit: (RunEvent) -> Void) {
        var stack = [(index, reason)]
        while let (job, why) = stack.popLast() {
            guard !journal.contains(job) else { continue }
            var result = JobResult(id: manifest.jobs[job].id, status: .skipped, dest: manifest.jobs[job].dest.redacted)
            result.skippedBecause = why
            result.isUpload = manifest.jobs[job].isUpload
            journal.record(ReportJournal.Encoded(RunReport.Job(result), listing: options.reportJobs), at: job)
            active.skipped(expected: manifest.jobs[job].size)
            emit(.jobFinished(result))
            for dependent in graph.dependents[job] {
                stack.append((dependent, "dependency '\(manifest.jobs[job].id)' was skipped"))
            }
        }
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

