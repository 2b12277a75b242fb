import ArgumentParser
import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// `batchfetch run`: downloads every job of a manifest and writes the report.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Download every job of a manifest, verify, publish atomically, and write a JSON report.",
        discussion: """
            Jobs start when their dependencies have succeeded. Each file is written to
            <dest>.part beside its destination, resumed across runs with Range and If-Range,
            verified against the manifest's size and checksums, and renamed into place only
            then. A line per finished job goes to stderr; the report goes to
            <output_dir>/batchfetch-report.json unless --report is given.

            Exit status: 0 all jobs succeeded (downloaded or already up to date), 1 one or more
            failed or were skipped, 2 invalid manifest or usage.

            Examples:
              batchfetch run datasets.yaml
              batchfetch run datasets.yaml --only train --only test
              batchfetch run datasets.yaml --dry-run
              batchfetch run datasets.yaml --report /var/log/batchfetch/last.json --durability strict
            """
    )

    @OptionGroup var manifest: ManifestArgument

    @Option(help: "Where to write the JSON report (default: <output_dir>/batchfetch-report.json).")
    var report: String?

    @Option(help: "Jobs transferring at once (overrides the manifest's concurrency).")
    var concurrency: Int?

    @Option(name: .customLong("only"), help: "Run only this job and the jobs it depends on (repeatable).")
    var only: [String] = []

    @Flag(help: "Print what would be fetched and what is already up to date, without any network access.")
    var dryRun = false

    @Option(help: "When files reach stable storage: batch (one syncfs at the end), strict (fsync each file and its directory), none.")
    var durability: DurabilityArgument = .batch

    enum DurabilityArgument: String, ExpressibleByArgument, CaseIterable {
        case batch, strict, none
    }

    func validate() throws {
        if let concurrency, concurrency < 1 { throw ValidationError("--concurrency must be at least 1") }
    }

    func run() async throws {
        var loaded = try manifest.load()
        if !only.isEmpty {
            switch loaded.selecting(only) {
            case .success(let selected):
                loaded = selected
            case .failure(let error):
                Console.error("batchfetch: error: --only: \(error)")
                throw ExitStatus.invalid.exitCode
            }
        }
        var options = RunOptions()
        options.concurrency = concurrency
        options.durability = Durability(rawValue: durability.rawValue) ?? .batch
        // Undocumented on purpose in --help: bench/ uses it to show memory stays bounded when the
        // disk is slower than the network (see Docs/Architecture.md).
        if let rate = ProcessInfo.processInfo.environment["BATCHFETCH_SIMULATED_DISK_RATE"] {
            guard case .success(let bytesPerSecond) = Quantity.rate(rate) else {
                Console.error("batchfetch: error: BATCHFETCH_SIMULATED_DISK_RATE: '\(rate)' is not a rate such as 100MiB/s")
                throw ExitStatus.invalid.exitCode
            }
            options.simulatedDiskRate = bytesPerSecond
        }
        let runner = Runner(manifest: loaded, options: options)
        if dryRun {
            let entries = runner.dryRun()
            for entry in entries {
                print(entry.upToDate ? "up to date   \(entry.id) -> \(entry.dest)" : "would fetch  \(entry.id) -> \(entry.dest)  from \(entry.url)")
            }
            let fetch = entries.filter { !$0.upToDate }.count
            print("dry run: \(fetch) to fetch, \(entries.count - fetch) up to date; nothing was downloaded")
            return
        }
        let result = await runner.run { job in Console.error(JobLine.describe(job)) }
        let path = report ?? runner.defaultReportPath
        do {
            try result.write(to: path)
        } catch {
            Console.error("batchfetch: error: cannot write report \(path): \(error.localizedDescription)")
        }
        let summary = result.summary
        Console.error("\(result.status.rawValue): \(summary.downloaded) downloaded, \(summary.upToDate) up to date, "
            + "\(summary.failed) failed, \(summary.skipped) skipped; \(ByteFormat.bytes(summary.bytesTransferred)) "
            + "transferred in \(String(format: "%.1f", result.durationSeconds))s; report: \(path)")
        if result.status != .succeeded { throw ExitStatus.jobsFailed.exitCode }
    }
}

/// The one-line description of a finished job printed on stderr.
enum JobLine {
    static func describe(_ job: JobResult) -> String {
        switch job.status {
        case .downloaded:
            let rate = job.duration > 0 ? Double(job.bytesTransferred) / job.duration : 0
            let resumed = job.resumedFrom.map { ", resumed at \(ByteFormat.bytes($0))" } ?? ""
            return "downloaded  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0)) in "
                + "\(String(format: "%.1f", job.duration))s (\(ByteFormat.bytes(Int64(rate)))/s\(resumed))"
        case .upToDate:
            return "up to date  \(job.id) -> \(job.dest)  \(ByteFormat.bytes(job.size ?? 0))"
        case .failed, .interrupted:
            let failure = job.failure.map { "\($0.code.rawValue): \($0.message)" } ?? "unknown"
            return "\(job.status == .failed ? "failed" : "interrupted")      \(job.id)  \(failure)"
        case .skipped:
            return "skipped     \(job.id)  \(job.skippedBecause ?? "")"
        }
    }
}

/// Human-readable byte counts (binary units).
enum ByteFormat {
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}
