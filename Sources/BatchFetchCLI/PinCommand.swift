import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// `batchfetch pin`: writes the lockfile.
struct PinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Fetch what is missing, then record every job's size and sha256 and every mirror's validators in the lockfile.",
        usage: "batchfetch pin [<options>] <manifest>",
        discussion: HelpText.reflowed("""
            Files already present and verified are reused; the rest are downloaded as by `run`
            (same run lock). Then each mirror is asked (HEAD, or GET of byte 0) for its size,
            ETag and Last-Modified. The lockfile (default: datasets.yaml -> datasets.lock.json)
            has sorted keys and no timestamps, so it diffs cleanly in git; URLs appear with
            environment-derived parts as ${VAR}. If any job fails, no lockfile is written. A
            content cache (--cache, BATCHFETCH_CACHE or the manifest's cache:) is read and
            filled as by `run`.

            Then `batchfetch run --locked` fails (exit 3) on content that differs from the lock,
            `batchfetch verify` checks local files against it, and `batchfetch check` compares
            the mirrors with it.

            Exit status: 0 lockfile written, 1 a job failed (nothing written), 2 invalid
            manifest, 4 another run holds the run lock.

            A sharded team pins from its reports instead: `--from-report` takes the merged
            report (or every shard's report, merged here), requires every job to have succeeded
            in it for this very manifest (same sha256), takes each job's verified size and
            sha256 from it and only asks the mirrors for their validators, so no machine needs
            the whole dataset. Exit 2 when the reports do not cover the manifest.

            Examples:
              batchfetch pin datasets.yaml
              batchfetch pin datasets.yaml --from-report data/batchfetch-report.shard-*.json
              batchfetch pin datasets.yaml --lock locks/datasets.lock.json
            """)
    )

    @OptionGroup var manifest: ManifestArgument
    @OptionGroup var lockOption: LockOption
    @OptionGroup var transportOption: TransportOption
    @OptionGroup var cacheOption: CacheOption

    @Option(name: .customLong("from-report"), parsing: .upToNextOption, help: ArgumentHelp(
        "Pin from run reports instead of running: a merged report, or every shard's report (merged here).",
        valueName: "report"), completion: .file(extensions: ["json"]))
    var fromReports: [String] = []

    @Option(name: .customLong("pieces"), help: ArgumentHelp(
        "Also record the sha256 of each piece of this size (a power of two from 256KiB to 64MiB; 4MiB when given without a size): a locked run checks each piece as it is written and fetches a bad one again alone.",
        valueName: "size"))
    var pieces: String?

    func run() async throws {
        // A prefix is pinned as the objects it lists now (each with its key, size, ETag, sha256),
        // a source as its files at the revision it resolves to now.
        let prepared = try await CommandPreparation.prepare(.pin, manifest: manifest, lock: lockOption, transport: transportOption.kind)
        if let (id, failure) = prepared.failures.sorted(by: { $0.key < $1.key }).first {
            throw CommandFailure(.jobsFailed, "batchfetch: error: job '\(id)': \(failure.code.rawValue): \(failure.message)")
        }
        let loaded = prepared.manifest
        let pieceLength = try pieces.map(Self.pieceLength)
        let sources = prepared.resolved.isEmpty ? nil : prepared.resolved
        guard fromReports.isEmpty else {
            var lock = try await pinFromReports(loaded, pieceLength)
            lock.sources = sources
            return try write(lock)
        }
        let (lock, report) = try await CommandRun.holdingLock(loaded.outputDirectory) {
            await pinner(loaded, pieceLength).run { await CommandRun.follow($0) }
        }
        guard var lock else {
            let unfinished = report.summary.failed + report.summary.skipped + report.summary.interrupted + (report.summary.deferred ?? 0)
            throw CommandFailure(.jobsFailed, "pin: \(unfinished) jobs did not succeed; no lockfile written")
        }
        lock.sources = sources
        try write(lock)
    }

    /// The run's options: the HTTP client `--transport` names, and the content cache the
    /// fetch reads and fills as `run` does.
    private func runOptions(_ loaded: Manifest) -> RunOptions {
        var options = RunOptions()
        options.transportKind = transportOption.kind
        options.cache = cacheOption.directory(for: loaded)
        return options
    }

    private func pinner(_ loaded: Manifest, _ pieceLength: Int64?) -> Pinner {
        Pinner(manifest: loaded, options: runOptions(loaded), pieceLength: pieceLength)
    }

    /// `--pieces SIZE`: a power of two from 256 KiB to 64 MiB (`--pieces` alone is 4 MiB:
    /// ``BatchFetchMain``).
    static func pieceLength(_ text: String) throws -> Int64 {
        guard case .success(let length) = Quantity.bytes(text), PieceHashes.allows(length) else {
            throw CommandFailure(.invalid, "batchfetch: error: --pieces must be a power of two from 256KiB to 64MiB, found '\(text)'")
        }
        return length
    }

    /// The lock from `--from-report`: the reports merged (when more than one), held to this
    /// manifest, then every mirror asked for its validators; nothing is downloaded.
    private func pinFromReports(_ loaded: Manifest, _ pieceLength: Int64?) async throws -> LockFile {
        let reports = try fromReports.map { (name: $0, report: try ReportFile.read($0, as: "--from-report ")) }
        let report = reports.count == 1 ? reports[0].report : try ReportFile.merged(reports, as: "--from-report: ")
        let pinner = pinner(loaded, pieceLength)
        let problems = pinner.problems(pinning: report)
        guard problems.isEmpty else {
            let name = reports.count == 1 ? reports[0].name : "the merged reports"
            for problem in problems.prefix(20) { Console.error("batchfetch: error: cannot pin from \(name): \(problem)") }
            if problems.count > 20 { Console.error("batchfetch: error: … and \(problems.count - 20) more") }
            throw CommandFailure(.invalid)
        }
        guard let lock = await pinner.lock(from: report) else {
            throw CommandFailure(.jobsFailed, "pin: the report does not cover every job; no lockfile written")
        }
        return lock
    }

    private func write(_ lock: LockFile) throws {
        let path = lockOption.path(forManifest: manifest.manifest)
        do {
            try lock.write(to: path)
        } catch {
            throw CommandFailure(.jobsFailed, "batchfetch: error: cannot write the lockfile \(path): \(error.localizedDescription)")
        }
        Console.error("pinned \(lock.jobs.count) jobs (\(lock.jobs.values.reduce(0) { $0 + $1.mirrors.count }) mirrors) in \(path)")
    }
}

/// The run lock for commands that write into output_dir, with exit 4 (Docs/Contracts.md §1).
enum RunLockOption {
    static func acquire(_ directory: String, shard: Shard? = nil, wait: Bool) throws -> RunLock {
        do {
            return try RunLock(directory: directory, shard: shard, wait: wait) { held in
                Console.error("batchfetch: waiting for the run lock \(held.path) held by \(describe(held))")
            }
        } catch let held as RunLock.Held {
            throw CommandFailure(.locked, "batchfetch: error: \(describe(held)) holds \(held.path); wait for it, or use --wait-lock")
        } catch let failure as BatchFetchError {
            throw CommandFailure(.jobsFailed, "batchfetch: error: cannot take the run lock: \(failure.localizedDescription)")
        }
    }

    private static func describe(_ held: RunLock.Held) -> String {
        if held.byShards { return "the runs of shards (of a split manifest)" }
        return "another batchfetch run" + (held.pid.map { " (pid \($0))" } ?? "")
    }
}
