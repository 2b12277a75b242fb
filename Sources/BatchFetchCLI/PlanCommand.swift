import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// `batchfetch plan`: shows the execution order and what already exists locally, offline but
/// for listing bucket prefixes and sources (each shown as the files it lists; `--locked`: as
/// pinned).
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show the jobs in execution order, their levels, and what already exists locally.",
        usage: "batchfetch plan [<options>] <manifest>",
        discussion: HelpText.reflowed("""
            Validates the manifest, orders the jobs by dependency level (jobs of one level can run
            in parallel), and for each job prints its URL(s) with secrets redacted, its
            destination, the expected size and checksum, and whether the destination (or a
            resumable .part) already exists. No network access, but to list a bucket prefix
            (s3://bucket/dir/) or a source (hf://, zenodo:, figshare:, doi:, a resolver's),
            shown as the files it lists now; with --locked as the lockfile pinned them, without
            listing.

            With a content cache (--cache, BATCHFETCH_CACHE or the manifest's cache:) each
            download whose content the cache holds is marked "in the cache" (json: in_cache): a
            run publishes it from there without a request unless it is already up to date. The
            cache is only looked at. With --locked the lockfile's sha256 is used for jobs the
            manifest does not pin, as `run --locked` does.

            With --shard K/N (or auto, as for `run`) only the jobs of that shard are shown;
            --shards N shows how N shards would split the manifest instead — jobs, components and
            declared bytes per shard — to help choose N.

            Examples:
              batchfetch plan datasets.yaml
              batchfetch plan datasets.yaml --shard 1/4 --format json
              batchfetch plan datasets.yaml --shards 16
              batchfetch plan --format json datasets.yaml
              batchfetch plan --format dot datasets.yaml | dot -Tsvg > plan.svg
            """)
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, dot
    }

    @OptionGroup var manifest: ManifestArgument

    @Option(help: "Output format: text, json or dot (Graphviz).", completion: .list(["text", "json", "dot"]))
    var format: Format = .text

    @OptionGroup var shardOption: ShardOption
    @OptionGroup var cacheOption: CacheOption

    @Flag(help: "Look jobs up in the cache by the lockfile's sha256 too, as run --locked would.")
    var locked = false

    @OptionGroup var lockOption: LockOption

    @Option(help: ArgumentHelp("Show how N shards would split the manifest (per shard: jobs, components, declared bytes) instead of the plan.",
                               valueName: "N"))
    var shards: Int?

    func validate() throws {
        if let shards, !(1...Shard.maximumCount).contains(shards) { throw ValidationError("--shards must be 1 to \(Shard.maximumCount)") }
        if shards != nil && shardOption.shard != nil { throw ValidationError("--shards and --shard cannot be combined") }
        if shards != nil && format == .dot { throw ValidationError("--shards prints text or json") }
    }

    func run() async throws {
        // --shards shows how the whole manifest would split: no shard is selected for it.
        let prepared = try await CommandPreparation.prepare(locked ? .planLocked : .plan, manifest: manifest, lock: lockOption,
                                                            shard: shards == nil ? shardOption : nil)
        for (id, failure) in prepared.failures.sorted(by: { $0.key < $1.key }) {
            Console.error("batchfetch: warning: job '\(id)': \(failure.message)")
        }
        let (loaded, lock) = (prepared.manifest, prepared.lock)
        keepUntilExit(loaded)
        var out = BufferedOutput()
        defer { out.flush() }
        if let shards {
            let assignment = ShardAssignment(jobs: loaded.jobs, count: shards)
            if format == .json {
                PlanFormatter.shardsJSON(assignment, manifest: loaded, to: &out)
            } else {
                PlanFormatter.shardsText(assignment, manifest: loaded, to: &out)
            }
            return
        }
        let (plan, scope) = (Plan(manifest: loaded), prepared.scope)
        let cache = cacheOption.directory(for: loaded).map { PlanFormatter.CacheLookup(cache: ContentCache(lookingAt: $0), lock: lock) }
        switch format {
        case .text: PlanFormatter.text(plan, shard: scope, cache: cache, to: &out)
        case .json: PlanFormatter.json(plan, shard: scope, cache: cache, to: &out)
        case .dot: PlanFormatter.dot(plan, to: &out)
        }
    }
}
