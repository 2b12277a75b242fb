import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// `batchfetch verify`: offline integrity check of the published files.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every destination on disk against the manifest's size and checksums and the lockfile, offline.",
        usage: "batchfetch verify [<options>] <manifest>",
        discussion: HelpText.reflowed("""
            Every file is read and hashed (no state cache: this is the check for files that
            changed behind batchfetch's back). Per job: ok, drift (size_mismatch,
            checksum_mismatch or lock_mismatch, with what was found) or missing. The lockfile is
            used when it exists (or --lock names one); the files of a bucket prefix or a source
            are the ones it pinned (without a lockfile they cannot be known offline, and are
            reported missing). The report goes to
            <output_dir>/batchfetch-verify.json unless --report is given.

            Exit status: 0 all ok, 3 any mismatch or missing file, 2 invalid manifest or lockfile.

            --shard K/N verifies only shard K's files (as `run --shard`), and its report defaults
            to batchfetch-verify.shard-K-of-N.json.

            Examples:
              batchfetch verify datasets.yaml
              batchfetch verify datasets.yaml --shard 0/4
              batchfetch verify datasets.yaml --lock datasets.lock.json --report verify.json
            """)
    )

    @OptionGroup var manifest: ManifestArgument
    @OptionGroup var lockOption: LockOption

    @Option(help: "Where to write the JSON report (default: <output_dir>/batchfetch-verify.json).", completion: .file())
    var report: String?

    @OptionGroup var shardOption: ShardOption

    @OptionGroup var metricsOption: MetricsOption

    func run() async throws {
        try await metricsOption.recording(.verify, manifest: manifest.manifest) { try await perform(report: &$0) }
    }

    /// The verification; hands its report to `report` as soon as it has one.
    private func perform(report finished: inout RunReport?) async throws {
        var options = RunOptions()
        let prepared = try await CommandPreparation.prepare(.verify, manifest: manifest, lock: lockOption, shard: shardOption)
        let (loaded, lock) = (prepared.manifest, prepared.lock)
        (options.unexpanded, options.shard) = (prepared.failures, prepared.scope)
        let result = await Verifier(manifest: loaded, lock: lock, options: options).run()
        finished = result
        for job in result.jobs where job.status != .ok {
            var line = job.status.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0) + "\(job.id) -> \(job.dest)"
            if let error = job.error { line += "  \(error.code.rawValue): \(error.message)" }
            Console.error(line)
        }
        let path = report ?? loaded.toolFile(options.shard.toolFile(ToolFiles.verifyReport))
        ReportFile.write(result, to: path)
        let summary = result.summary
        Console.error("verify: \(summary.ok ?? 0) ok, \(summary.drift ?? 0) mismatched, \(summary.missing ?? 0) missing"
            + "\(lock == nil ? "" : " (with the lockfile)"); report: \(path)")
        if let exit = ExitStatus.of(result) { throw CommandFailure(exit) }
    }
}
