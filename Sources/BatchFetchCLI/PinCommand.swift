import ArgumentParser
import BatchFetchEngine
import Foundation

/// `batchfetch pin`: writes the lockfile.
struct PinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Fetch what is missing, then record every job's size and sha256 and every mirror's validators in the lockfile.",
        discussion: HelpText.reflowed("""
            Files already present and verified are reused; the rest are downloaded as by `run`
            (same run lock). Then each mirror is asked (HEAD, or GET of byte 0) for its size,
            ETag and Last-Modified. The lockfile (default: datasets.yaml -> datasets.lock.json)
            has sorted keys and no timestamps, so it diffs cleanly in git; URLs appear with
            environment-derived parts as ${VAR}. If any job fails, no lockfile is written.

            Then `batchfetch run --locked` fails (exit 3) on content that differs from the lock,
            `batchfetch verify` checks local files against it, and `batchfetch check` compares
            the mirrors with it.

            Exit status: 0 lockfile written, 1 a job failed (nothing written), 2 invalid
            manifest, 4 another run holds the run lock.

            Examples:
              batchfetch pin datasets.yaml
              batchfetch pin datasets.yaml --lock locks/datasets.lock.json
            """)
    )

    @OptionGroup var manifest: ManifestArgument
    @OptionGroup var lockOption: LockOption

    func run() async throws {
        let loaded = try manifest.load()
        let runLock = try RunLockOption.acquire(loaded.outputDirectory, wait: false)
        let printer = ProgressPrinter(mode: isatty(STDERR_FILENO) != 0 ? .bar : .line) { Console.errorText($0) }
        let (lock, report) = await Pinner(manifest: loaded).run { run in
            for await event in run.events { printer.handle(event) }
        }
        printer.finish()
        withExtendedLifetime(runLock) {}
        guard let lock else {
            Console.error("pin: \(report.summary.failed + report.summary.skipped + report.summary.interrupted) jobs did not succeed; no lockfile written")
            throw ExitStatus.jobsFailed.exitCode
        }
        let path = lockOption.path(forManifest: manifest.manifest)
        do {
            try lock.write(to: path)
        } catch {
            Console.error("batchfetch: error: cannot write the lockfile \(path): \(error.localizedDescription)")
            throw ExitStatus.jobsFailed.exitCode
        }
        Console.error("pinned \(lock.jobs.count) jobs (\(lock.jobs.values.reduce(0) { $0 + $1.mirrors.count }) mirrors) in \(path)")
    }
}

/// The run lock for commands that write into output_dir, with exit 4 (Docs/Contracts.md §1).
enum RunLockOption {
    static func acquire(_ directory: String, wait: Bool) throws -> RunLock {
        do {
            return try RunLock(directory: directory, wait: wait) { held in
                Console.error("batchfetch: waiting for the run lock \(held.path)\(held.pid.map { " held by pid \($0)" } ?? "")")
            }
        } catch let held as RunLock.Held {
            Console.error("batchfetch: error: another batchfetch run\(held.pid.map { " (pid \($0))" } ?? "") holds \(held.path); "
                + "wait for it, or use --wait-lock")
            throw ExitStatus.locked.exitCode
        } catch let failure as DownloadFailure {
            Console.error("batchfetch: error: cannot take the run lock: \(failure.localizedDescription)")
            throw ExitStatus.jobsFailed.exitCode
        }
    }
}
