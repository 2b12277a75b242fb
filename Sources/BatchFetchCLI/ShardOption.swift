import ArgumentParser
import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// `--shard K/N|auto` and `--shard-count N`: run a command on one shard of a split manifest
/// (Docs/Contracts.md §7). The shard is taken here, printed with where it came from, and the
/// manifest cut down to its jobs before anything else sees it.
struct ShardOption: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Only the jobs of shard K of N (0-based; jobs joined by dependencies stay together), or auto: "
            + "from BATCHFETCH_SHARD=K/N, Kubernetes JOB_COMPLETION_INDEX or a Slurm array task.",
        valueName: "K/N|auto"))
    var shard: String?

    @Option(help: ArgumentHelp("N for --shard auto where the environment gives only the index (Kubernetes; default: the manifest's shard_count).",
                               valueName: "N"))
    var shardCount: Int?

    func validate() throws {
        if let shardCount, !(1...Shard.maximumCount).contains(shardCount) {
            throw ValidationError("--shard-count must be 1 to \(Shard.maximumCount)")
        }
        if shardCount != nil && shard != "auto" { throw ValidationError("--shard-count applies to --shard auto only") }
        if let shard, shard != "auto", case .failure(let error) = Shard.parse(shard) {
            throw ValidationError("--shard: \(error)")
        }
    }

    /// The manifest cut down to this shard's jobs, the scope for the report, and `lock` (the
    /// whole manifest's lockfile, already checked against it) cut down the same way; all three
    /// as given, with no scope, without `--shard`. Prints which shard was taken, from where, and
    /// its size; an environment that names no shard exits 2.
    func select(_ manifest: Manifest, lock: LockFile? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> (manifest: Manifest, scope: ShardScope?, lock: LockFile?) {
        guard let shard else { return (manifest, nil, lock) }
        let taken: (shard: Shard, source: String)
        let resolved = shard == "auto"
            ? ShardEnvironment.resolve(environment, count: shardCount ?? manifest.shardCount)
            : Shard.parse(shard).map({ ($0, "--shard") })
        switch resolved {
        case .success(let found):
            taken = found
        case .failure(let error):
            throw CommandFailure(.invalid, "batchfetch: error: \(error)")
        }
        let assignment = ShardAssignment(jobs: manifest.jobs, count: taken.shard.count)
        let selected = manifest.selecting(taken.shard, of: assignment)
        let total = assignment.totals[taken.shard.index]
        Console.error("batchfetch: shard \(taken.shard) (from \(taken.source)): \(total.jobs) of \(manifest.jobs.count) jobs, "
            + "\(ByteFormat.bytes(total.bytes)) declared\(total.unsizedJobs > 0 ? " + \(total.unsizedJobs) without size" : "")")
        return (selected, ShardScope(shard: taken.shard, manifestJobs: manifest.jobs.count), lock?.restricted(to: selected))
    }
}
