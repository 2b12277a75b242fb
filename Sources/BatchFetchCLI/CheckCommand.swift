import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// `batchfetch check`: mirror drift.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Ask every mirror of every job what it serves and compare with the lockfile (or the manifest).",
        usage: "batchfetch check [<options>] <manifest>",
        discussion: HelpText.reflowed("""
            Each mirror gets a HEAD request (or, where HEAD is refused with 405/501, a GET of
            byte 0); its size, ETag, Last-Modified and any RFC 9530 Repr-Digest/Content-Digest
            are compared with the lockfile, or with the manifest's size and sha256 when there is
            no lockfile. --deep streams each mirror's whole content through sha256 instead
            (nothing is written to disk, memory stays bounded): then only size and sha256 count,
            so a new ETag over the same bytes is ok. concurrency, per_host and retries apply.

            Per mirror: ok, drift (each differing field with expected and actual), missing
            (404/410) or unreachable (after retries). A bucket prefix or a source (hf://,
            zenodo:, figshare:, doi:, a resolver's) is listed again: a file the lockfile lacks is
            drift ("added"), a pinned file no longer listed missing ("removed"), one listed with
            another size or digest drift ("changed"). The report (--report, default
            <output_dir>/batchfetch-check.json) lists them per job.

            Exit status: 0 every mirror ok, 3 any drift or missing, 1 otherwise (a mirror was
            unreachable), 2 invalid manifest or lockfile.

            --shard K/N checks only shard K's jobs (as `run --shard`), and its report defaults to
            batchfetch-check.shard-K-of-N.json; `batchfetch merge-reports` combines them.

            Examples:
              batchfetch check datasets.yaml
              batchfetch check datasets.yaml --shard auto
              batchfetch check datasets.yaml --deep --report check.json
            """)
    )

    @OptionGroup var manifest: ManifestArgument
    @OptionGroup var lockOption: LockOption

    @OptionGroup var shardOption: ShardOption
    @OptionGroup var transportOption: TransportOption

    @Flag(help: "Hash each mirror's whole content (no disk writes) instead of trusting its headers.")
    var deep = false

    @Option(help: "Where to write the JSON report (default: <output_dir>/batchfetch-check.json).", completion: .file())
    var report: String?

    @OptionGroup var metricsOption: MetricsOption

    func run() async throws {
        try await metricsOption.recording(.check, manifest: manifest.manifest) { try await perform(report: &$0) }
    }

    /// The check; hands its report to `report` as soon as it has one.
    private func perform(report finished: inout RunReport?) async throws {
        var options = RunOptions()
        options.transportKind = transportOption.kind
        let prepared = try await CommandPreparation.prepare(.check, manifest: manifest, lock: lockOption, shard: shardOption,
                                                            transport: transportOption.kind)
        let (loaded, lock) = (prepared.manifest, prepared.lock)
        (options.unexpanded, options.shard) = (prepared.failures, prepared.scope)
        // Files the listing added belong to no shard: only an unsharded check reports them.
        var listing = prepared.drift
        if (prepared.scope?.shard.count ?? 1) > 1 { listing.added = [] }
        let result = await Checker(manifest: loaded, lock: lock, deep: deep, options: options, listing: listing).run()
        finished = result
        for job in result.jobs {
            for mirror in job.mirrors ?? [] { Console.error(CheckLine.describe(mirror, job: job.id)) }
        }
        let path = report ?? loaded.toolFile(options.shard.toolFile(ToolFiles.checkReport))
        ReportFile.write(result, to: path)
        Console.error("check: \(ReportFile.counts(result)) (\(lock == nil ? "against the manifest" : "against the lockfile")\(deep ? ", deep" : "")); report: \(path)")
        if let exit = ExitStatus.of(result) { throw CommandFailure(exit) }
    }
}

/// Lines printed by `check` and `verify`.
enum CheckLine {
    static func describe(_ mirror: MirrorCheck, job: String) -> String {
        let label = mirror.status.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
        var line = "\(label)\(job) [\(mirror.mirrorIndex)] \(mirror.url)"
        if let differences = mirror.differences {
            line += "  " + differences.map { "\($0.field): expected \($0.expected), got \($0.actual)" }.joined(separator: "; ")
        } else if mirror.status == .missing || mirror.status == .unreachable {
            line += "  " + (mirror.message ?? mirror.httpStatus.map { "HTTP \($0)" } ?? "")
        }
        return line
    }

    /// A `verify` job line (also used for such results in `run` output).
    static func describe(_ job: JobResult) -> String {
        let label = job.status.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
        let detail = job.failure.map { "  \($0.code.rawValue): \($0.message)" } ?? (job.status == .missing ? "  no file" : "")
        return "\(label)\(job.id) -> \(job.dest)\(detail)"
    }
}
