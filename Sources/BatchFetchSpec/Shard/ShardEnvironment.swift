/// Finds this machine's shard in the environment a scheduler gives its tasks (`--shard auto`).
///
/// Read in this order, the first present wins (Docs/Contracts.md §7):
/// 1. `BATCHFETCH_SHARD=K/N` — set by hand, e.g. from a CI matrix; the most specific.
/// 2. `JOB_COMPLETION_INDEX` — a Kubernetes Indexed Job's pod index. Kubernetes does not pass
///    the number of completions, so N comes from `--shard-count` or the manifest's `shard_count`.
/// 3. `SLURM_ARRAY_TASK_ID` — a Slurm array task. N is `SLURM_ARRAY_TASK_COUNT`, and K counts
///    from `SLURM_ARRAY_TASK_MIN` in steps of `SLURM_ARRAY_TASK_STEP`, so `--array=1-8` and
///    `--array=0-14:2` work; an irregular list such as `--array=1,4,5` names no shard and is an
///    error rather than a guess.
package enum ShardEnvironment {
    /// The shard and where it came from (for the line batchfetch prints), or why none was found.
    /// `count` is N from `--shard-count` or the manifest, used where the environment has none.
    package static func resolve(_ environment: [String: String], count: Int?) -> Result<(shard: Shard, source: String), ShardError> {
        if let text = environment["BATCHFETCH_SHARD"] {
            return Shard.parse(text).map { ($0, "BATCHFETCH_SHARD=\(text)") }
                .mapError { ShardError("BATCHFETCH_SHARD: \($0)") }
        }
        if let text = environment["JOB_COMPLETION_INDEX"] {
            guard let index = Int(text) else { return .failure(ShardError("JOB_COMPLETION_INDEX='\(text)' is not a number")) }
            guard let count else {
                return .failure(ShardError("JOB_COMPLETION_INDEX=\(text) gives the index only: pass --shard-count N "
                    + "(the Job's completions) or set shard_count in the manifest"))
            }
            return shard(index, count, given: "JOB_COMPLETION_INDEX=\(text) of \(count)")
                .map { ($0, "Kubernetes JOB_COMPLETION_INDEX=\(text), \(count) shards") }
        }
        if let text = environment["SLURM_ARRAY_TASK_ID"] {
            return slurm(task: text, environment).map { ($0, "Slurm SLURM_ARRAY_TASK_ID=\(text) of \($0.count) tasks") }
        }
        return .failure(ShardError("--shard auto: none of BATCHFETCH_SHARD, JOB_COMPLETION_INDEX (Kubernetes) or "
            + "SLURM_ARRAY_TASK_ID (Slurm) is set; give --shard K/N"))
    }

    private static func slurm(task text: String, _ environment: [String: String]) -> Result<Shard, ShardError> {
        func number(_ name: String) -> Result<Int, ShardError> {
            guard let value = environment[name] else { return .failure(ShardError("SLURM_ARRAY_TASK_ID is set but \(name) is not")) }
            guard let number = Int(value) else { return .failure(ShardError("\(name)='\(value)' is not a number")) }
            return .success(number)
        }
        do {
            let task = try number("SLURM_ARRAY_TASK_ID").get()
            let count = try number("SLURM_ARRAY_TASK_COUNT").get()
            let minimum = try number("SLURM_ARRAY_TASK_MIN").get()
            let maximum = environment["SLURM_ARRAY_TASK_MAX"] == nil ? nil : try number("SLURM_ARRAY_TASK_MAX").get()
            let step = environment["SLURM_ARRAY_TASK_STEP"] == nil ? 1 : try number("SLURM_ARRAY_TASK_STEP").get()
            let regular = step >= 1 && count >= 1 && maximum.map { $0 == minimum + (count - 1) * step } ?? true
            guard regular, task >= minimum, (task - minimum) % step == 0 else {
                return .failure(ShardError("the Slurm array (SLURM_ARRAY_TASK_MIN=\(minimum), SLURM_ARRAY_TASK_MAX="
                    + "\(maximum.map(String.init) ?? "unset"), SLURM_ARRAY_TASK_STEP=\(step), SLURM_ARRAY_TASK_COUNT=\(count)) "
                    + "is not a regular range, so task \(task) names no shard: submit --array=0-\(max(count, 1) - 1), "
                    + "or set BATCHFETCH_SHARD=K/N"))
            }
            return shard((task - minimum) / step, count, given: "SLURM_ARRAY_TASK_ID=\(task)")
        } catch {
            return .failure(error)
        }
    }

    private static func shard(_ index: Int, _ count: Int, given: String) -> Result<Shard, ShardError> {
        guard let shard = Shard(index: index, count: count) else {
            return .failure(ShardError(Shard.rangeProblem(index: index, count: count, given: given)))
        }
        return .success(shard)
    }
}
