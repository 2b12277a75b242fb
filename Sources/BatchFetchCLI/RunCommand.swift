import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchFiles
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// `batchfetch run`: downloads every job of a manifest and writes the report.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Download every job of a manifest, verify, publish atomically, and write a JSON report.",
        discussion: HelpText.reflowed("""
            Jobs start when their dependencies have succeeded. Each file is written to
            <dest>.part beside its destination, resumed across runs with Range and If-Range,
            verified against the manifest's size and checksums, and renamed into place only
            then. Progress goes to stderr (bars on a terminal; in logs a line per finished job
            and a summary every 10 s); the report goes to <output_dir>/batchfetch-report.json
            unless --report is given, also when the run fails or is interrupted.

            One run per output directory: a second one exits 4 naming the first one's pid,
            unless --wait-lock. SIGINT or SIGTERM stops the run (partials are kept, the report
            says interrupted) and exits 130 or 143; the same signal again within a second is the
            same request (as `timeout` sends it twice), a later one exits at once.

            With --locked every job is held to the lockfile written by `batchfetch pin`: content
            that differs fails with lock_mismatch, and a lockfile whose jobs are not the
            manifest's is refused before any download.

            A budget keeps a run to its window: past --max-duration (counted from the moment
            the run lock is held) or --max-bytes no job starts; with --cutoff hard the running
            ones are interrupted too, their partials kept. Jobs that did not finish are deferred
            (and their dependents), and the run exits 5; the next run continues them.

            Exit status: 0 all jobs succeeded (downloaded or already up to date), 1 one or more
            failed or were skipped, 2 invalid manifest or usage, 3 lock mismatch (--locked), 4
            another run holds the run lock, 5 stopped at its budget with nothing failed,
            130/143 interrupted.

            With --shard K/N only the jobs of shard K run (jobs joined by dependencies stay in
            one shard; every machine computes the same split from the manifest), with the
            shard's own report (batchfetch-report.shard-K-of-N.json), state cache and run lock,
            so the shards of one split can share output_dir; `batchfetch merge-reports` combines
            their reports. --shard auto takes K/N from BATCHFETCH_SHARD, a Kubernetes Indexed
            Job (JOB_COMPLETION_INDEX, with --shard-count) or a Slurm array task.

            Examples:
              batchfetch run datasets.yaml
              batchfetch run datasets.yaml --shard 2/8
              batchfetch run datasets.yaml --shard auto
              batchfetch run datasets.yaml --only train --only test
              batchfetch run datasets.yaml --dry-run
              batchfetch run datasets.yaml --progress line --events events.ndjson --junit junit.xml
              batchfetch run datasets.yaml --locked
              batchfetch run datasets.yaml --max-duration 6h --max-bytes 200GiB --cutoff hard
              batchfetch run datasets.yaml --report /var/log/batchfetch/last.json --durability strict
            """)
    )

    @OptionGroup var manifest: ManifestArgument

    @Option(help: "Where to write the JSON report (default: <output_dir>/batchfetch-report.json).", completion: .file())
    var report: String?

    @Option(help: ArgumentHelp("Stream events as NDJSON to this file, or - for stdout.", valueName: "path|-"), completion: .file())
    var events: String?

    @Option(help: "Write a JUnit XML file with one testcase per job.", completion: .file(extensions: ["xml"]))
    var junit: String?

    @Option(name: .customLong("report-jobs"),
            help: ArgumentHelp("Jobs the report (and JUnit file) lists: all, changed (all but up_to_date) or failed "
                + "(failed, skipped, interrupted). The summary counts every job.", valueName: "all|changed|failed"),
            completion: .list(["all", "changed", "failed"]))
    var reportJobs: ReportJobsArgument = .all

    @Option(help: "Jobs transferring at once (overrides the manifest's concurrency).")
    var concurrency: Int?

    @Option(name: .customLong("only"), help: "Run only this job and the jobs it depends on (repeatable).")
    var only: [String] = []

    @Flag(help: "Start no more jobs after the first failure; transfers in flight finish.")
    var failFast = false

    @Flag(help: "Print what would be fetched and what is already up to date, without any network access.")
    var dryRun = false

    @Option(help: "Progress on stderr: bar (terminal), line (logs), none, or auto (bar on a terminal, else line).",
            completion: .list(["auto", "bar", "line", "none"]))
    var progress: ProgressArgument = .auto

    @Flag(name: [.short, .long], help: "In line mode, also a line for each job that was already up to date (by default only counted).")
    var verbose = false

    @Option(help: "When files reach stable storage: batch (one syncfs at the end), strict (fsync each file and its directory), none.",
            completion: .list(["batch", "strict", "none"]))
    var durability: DurabilityArgument = .batch

    @Option(name: .customLong("max-duration"),
            help: ArgumentHelp("Start no job after this long (overrides the manifest's max_duration); jobs not finished are deferred, exit 5.",
                               valueName: "duration"))
    var maxDuration: String?

    @Option(name: .customLong("max-bytes"),
            help: ArgumentHelp("Start no job once the run's jobs have transferred this much (overrides max_bytes).", valueName: "size"))
    var maxBytes: String?

    @Option(help: ArgumentHelp("The run's total download rate: a rate (10Mi) or a timetable in local time, as rclone writes it "
                               + "(\"08:00,512Ki 19:00,10Mi 23:00,off\"); overrides the manifest's bandwidth.",
                               valueName: "rate|timetable"))
    var bwlimit: String?

    @Option(help: ArgumentHelp("What a spent budget does to running jobs: soft (they finish) or hard (they are interrupted, partials kept).",
                               valueName: "soft|hard"),
            completion: .list(["soft", "hard"]))
    var cutoff: CutoffArgument?

    enum CutoffArgument: String, ExpressibleByArgument, CaseIterable {
        case soft, hard
    }

    @Flag(help: "Run none of the manifest's hooks (on_start, on_success, on_failure, on_finish).")
    var noHooks = false

    @Flag(help: "Wait for another run on the same output directory to finish instead of exiting 4.")
    var waitLock = false

    @Flag(help: "Hold every job to the lockfile: content that differs fails with lock_mismatch (exit 3).")
    var locked = false

    @OptionGroup var lockOption: LockOption

    @OptionGroup var shardOption: ShardOption
    @OptionGroup var transportOption: TransportOption
    @OptionGroup var cacheOption: CacheOption
    @OptionGroup var metricsOption: MetricsOption

    enum DurabilityArgument: String, ExpressibleByArgument, CaseIterable {
        case batch, strict, none
    }

    enum ProgressArgument: String, ExpressibleByArgument, CaseIterable {
        case auto, bar, line, none
    }

    enum ReportJobsArgument: String, ExpressibleByArgument, CaseIterable {
        case all, changed, failed
    }

    func validate() throws {
        if let concurrency, concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
        if !only.isEmpty && shardOption.shard != nil { throw ValidationError("--only and --shard cannot be combined") }
        _ = try budgetFlags()
        _ = try bandwidthFlag()
    }

    func run() async throws {
        // A dry run sends nothing, so it has no run to measure.
        try await metricsOption.recording(.run, manifest: manifest.manifest, skip: dryRun) { try await perform(report: &$0) }
    }

    /// The run; hands its report to `report` as soon as it has one.
    private func perform(report finished: inout RunReport?) async throws {
        let command: Preparation.Command = locked ? .runLocked : dryRun ? .dryRun : .run
        let prepared = try await CommandPreparation.prepare(command, manifest: manifest, lock: lockOption, shard: shardOption,
                                                            only: only, transport: transportOption.kind)
        let loaded = prepared.manifest
        var options = try options()
        options.budget = try budgetFlags().map { loaded.budget.overridden(by: $0, cutoffGiven: cutoff != nil) }
        options.bandwidth = try bandwidthFlag()
        (options.unexpanded, options.shard) = (prepared.failures, prepared.scope)
        options.lock = locked ? prepared.lock : nil
        options.cache = cacheOption.directory(for: loaded)
        let runner = Runner(manifest: loaded, options: options)
        if dryRun {
            let entries = runner.dryRun()
            // Without a lockfile a dry run cannot know a source's or prefix's files offline.
            let unlisted = Set(loaded.jobs.filter { $0.listing != nil }.map(\.id))
            for entry in entries {
                if unlisted.contains(entry.id) {
                    print("would list   \(entry.id) -> \(entry.dest)/  from \(entry.url) (its files are known once listed; pin to see them)")
                } else if entry.isUpload {
                    print("would upload \(entry.id) \(entry.dest) -> \(entry.url)")
                } else {
                    print(entry.upToDate ? "up to date   \(entry.id) -> \(entry.dest)"
                        : entry.fromCache ? "from cache   \(entry.id) -> \(entry.dest)"
                        : "would fetch  \(entry.id) -> \(entry.dest)  from \(entry.url)")
                }
            }
            let uploads = entries.filter(\.isUpload).count
            let fetch = entries.filter { !$0.upToDate && !$0.isUpload && !unlisted.contains($0.id) }.count
            let cached = entries.filter(\.fromCache).count
            print("dry run: \(fetch) to fetch" + (cached > 0 ? " (\(cached) from the cache)" : "")
                + ", \(entries.count - fetch - uploads - unlisted.count) up to date"
                + (uploads > 0 ? ", \(uploads) to upload (unless the target has the file)" : "")
                + (unlisted.isEmpty ? "" : ", \(unlisted.count) to list") + "; nothing was sent")
            return
        }

        if let report { try ReportFile.checkWritable(report) }
        let eventWriter: EventWriter?
        do {
            eventWriter = try events.map(EventWriter.init(path:))
        } catch {
            throw CommandFailure(.invalid, "batchfetch: error: cannot write events to \(events ?? ""): \(error.localizedDescription)")
        }
        let hooks = noHooks || loaded.hooks.isEmpty ? nil : HookRunner(
            hooks: loaded.hooks, manifestPath: loaded.path,
            manifestDirectory: URL(fileURLWithPath: loaded.path).standardizedFileURL.deletingLastPathComponent().path,
            transport: options.httpTransport(perHost: loaded.perHost), environment: options.environment,
            log: { Console.error($0) })
        let (result, path, written, code) = try await CommandRun.holdingLock(
            loaded.outputDirectory, shard: options.shard?.shard, wait: waitLock
        ) {
            let path = report ?? runner.defaultReportPath
            // A signal stops the on_start hooks (their commands killed, their requests cancelled)
            // and the run, once it has started; the run then ends at once, as interrupted.
            let startHooks = Interruption()
            let running = NIOLockedValueBox<RunHandle?>(nil)
            let trap = SignalTrap { signal in
                Console.error("batchfetch: \(signal == SIGINT ? "SIGINT" : "SIGTERM"): stopping; partials are kept for a rerun (again to exit now)")
                startHooks.interrupt()
                running.withLockedValue { $0 }?.interrupt()
            }
            // Hooks run only for a run that got past validation and the run lock.
            var records = await hooks?.fire(.onStart, summary: .starting(manifest: loaded.path, report: path, at: Date()),
                                            interruption: startHooks) ?? []
            let run = runner.start()
            running.withLockedValue { $0 = run }
            if trap.signal != nil { run.interrupt() }
            await CommandRun.follow(run, mode: progressMode, listsUpToDate: verbose, writer: eventWriter)
            var result = await run.report
            var written = ReportFile.write(result, to: path)
            if let junit, !ReportFile.writeJUnit(result, to: junit) { written = false }
            let code = Self.exitCode(of: result, signal: trap.signal, written: written)
            // The closing hooks see the report on disk; it is written again with what they did.
            if let hooks {
                let summary = RunSummary(result, manifest: loaded.path, exitCode: code, reportPath: path)
                for event in HookPlan.closingEvents(exitCode: code) { records += await hooks.fire(event, summary: summary) }
                result.hooks = records
                if !records.isEmpty, written { written = ReportFile.write(result, to: path) }
            }
            withExtendedLifetime(trap) {}
            return (result, path, written, code)
        }
        finished = result
        let summary = result.summary
        Console.error("\(result.status.rawValue): \(ReportFile.counts(result)); "
            + "\(ByteFormat.bytes(summary.bytesTransferred)) transferred in \(ByteFormat.seconds(result.durationSeconds))s; "
            + (written ? "report: \(path)" : "report NOT written"))
        if let status = ExitStatus(rawValue: code) {
            if status != .success { throw CommandFailure(status) }
        } else {
            throw ExitCode(code)  // a signal's 128 + N
        }
    }

    /// The exit code of a finished run (Docs/Contracts.md §1): a signal's 128 + N, else what the
    /// report calls for, else 1 when the report (or JUnit file) could not be written — a run
    /// whose report is missing did not do its whole job.
    static func exitCode(of report: RunReport, signal: Int32?, written: Bool) -> Int32 {
        if let signal { return 128 + signal }
        if let exit = ExitStatus.of(report) { return exit.rawValue }
        return written ? 0 : ExitStatus.jobsFailed.rawValue
    }

    /// `--bwlimit` parsed; a malformed one is a usage error.
    private func bandwidthFlag() throws -> BandwidthTimetable? {
        guard let bwlimit else { return nil }
        do {
            return try BandwidthTimetable(parsing: bwlimit)
        } catch {
            throw ValidationError("--bwlimit: \(error.message)")
        }
    }

    /// The budget the flags give, over the manifest's (``RunOptions/budget``); nil when no flag
    /// sets one. A zero or negative duration or size is a usage error.
    private func budgetFlags() throws -> RunBudget? {
        guard maxDuration != nil || maxBytes != nil || cutoff != nil else { return nil }
        var flags = RunBudget(cutoff: cutoff.flatMap { RunBudget.Cutoff(rawValue: $0.rawValue) } ?? .soft)
        if let maxDuration {
            guard case .success(let seconds) = Quantity.seconds(maxDuration), seconds > 0 else {
                throw ValidationError("--max-duration: '\(maxDuration)' is not a duration longer than zero such as 90m or 6h")
            }
            flags.maxDuration = seconds
        }
        if let maxBytes {
            guard !maxBytes.hasPrefix("-"), case .success(let bytes) = Quantity.bytes(maxBytes), bytes > 0 else {
                throw ValidationError("--max-bytes: '\(maxBytes)' is not a size greater than zero such as 500MiB or 2TB")
            }
            flags.maxBytes = bytes
        }
        return flags
    }

    private var progressMode: ProgressPrinter.Mode? {
        switch progress {
        case .auto: nil
        case .bar: .bar
        case .line: .line
        case .none: ProgressPrinter.Mode.none
        }
    }

    private func options() throws -> RunOptions {
        var options = RunOptions()
        options.transportKind = transportOption.kind
        options.concurrency = concurrency
        options.failFast = failFast
        options.reportJobs = RunReport.JobsReported(rawValue: reportJobs.rawValue)
        options.durability = Durability(rawValue: durability.rawValue) ?? .batch
        // Undocumented on purpose in --help: bench/ uses it to show memory stays bounded when the
        // disk is slower than the network (see Docs/Architecture.md).
        if let rate = ProcessInfo.processInfo.environment["BATCHFETCH_SIMULATED_DISK_RATE"] {
            guard case .success(let bytesPerSecond) = Quantity.rate(rate) else {
                throw CommandFailure(.invalid, "batchfetch: error: BATCHFETCH_SIMULATED_DISK_RATE: '\(rate)' is not a rate such as 100MiB/s")
            }
            options.simulatedDiskRate = bytesPerSecond
        }
        return options
    }
}

/// The one-line description of a finished job printed on stderr.
enum JobLine {
    static func describe(_ job: JobResult) -> String {
        line(job) + (job.extracted.map { tree in
            let what = "\(tree.files) file\(tree.files == 1 ? "" : "s") (\(ByteFormat.bytes(tree.bytes))) in \(tree.into)"
            return tree.repaired.map { ";  \($0) changed entr\($0 == 1 ? "y" : "ies") restored, \(what)" } ?? ";  \(what)"
        } ?? "")
    }

    private static func line(_ job: JobResult) -> String {
        switch job.status {
        case .run(.downloaded) where job.source == .cache:
            return "downloaded  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0)) from the cache"
        case .run(.downloaded) where job.copiedFrom != nil:
            return "downloaded  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0)), the same URL as '\(job.copiedFrom!)' (linked or copied)"
        case .run(.downloaded):
            let rate = job.duration > 0 ? Double(job.bytesTransferred) / job.duration : 0
            let resumed = job.resumedFrom.map { ", resumed at \(ByteFormat.bytes($0))" } ?? ""
            return "downloaded  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0)) in "
                + "\(ByteFormat.seconds(job.duration))s (\(ByteFormat.bytes(Int64(rate)))/s\(resumed))"
        case .run(.uploaded):
            let rate = job.duration > 0 ? Double(job.bytesTransferred) / job.duration : 0
            return "uploaded    \(job.id) \(job.dest) -> \(job.url ?? "")  \(ByteFormat.bytes(job.size ?? 0)) in "
                + "\(ByteFormat.seconds(job.duration))s (\(ByteFormat.bytes(Int64(rate)))/s), HTTP \(job.httpStatus ?? 0)"
        case .run(.upToDate) where job.isUpload:
            return "up to date  \(job.id) \(job.dest) -> \(job.url ?? "")  \(ByteFormat.bytes(job.size ?? 0)) (already there)"
        case .run(.upToDate):
            return "up to date  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0))"
        case .run(.failed), .run(.interrupted):
            let failure = job.failure.map { "\($0.code.rawValue): \($0.message)" } ?? "unknown"
            return "\(job.status == .failed ? "failed      " : "interrupted ")\(job.id)  \(failure)"
        case .run(.skipped):
            return "skipped     \(job.id)  \(job.skippedBecause ?? "")"
        case .run(.deferred):
            return "deferred    \(job.id)  \(job.deferredBecause?.rawValue ?? "budget") spent; the next run continues it"
        case .verdict:
            return CheckLine.describe(job)
        }
    }
}
