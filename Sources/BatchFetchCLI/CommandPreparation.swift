import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// The steps every command takes before it works, in one order and one place (Docs/Sources.md,
/// "The preparation pipeline"), as SwiftPM's `SwiftCommandState` is the one seam before each
/// of its commands: load and validate the manifest (exit 2), narrow it to `--only`, read the
/// lockfile once as ``Preparation/policy(_:)`` says (missing when required: 2; not the
/// manifest's jobs: 3), expand its sources and prefixes (``Preparation/expand``), then select
/// the shard. Printing a problem and choosing its exit status happen here, not in each command.
struct CommandPreparation {
    var manifest: Manifest
    /// The lockfile, cut down to the shard (nil when the command does not use one or there is none).
    var lock: LockFile?
    var scope: ShardScope?
    /// Listing jobs that failed and files that cannot be placed, by id (``RunOptions/unexpanded``).
    var failures: [String: BatchFetchError]
    /// What each source resolved to (what `pin` writes into the lock).
    var resolved: [String: LockFile.Resolved]
    /// `check` against a lockfile: how the listing now differs from it.
    var drift: ListingDrift

    /// Prepares `argument`'s manifest for `command`.
    static func prepare(_ command: Preparation.Command, manifest argument: ManifestArgument, lock lockOption: LockOption,
                        shard shardOption: ShardOption? = nil, only: [String] = [], transport: TransportKind = .default,
                        environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> CommandPreparation {
        var loaded = try argument.load()
        if !only.isEmpty {
            switch loaded.selecting(only) {
            case .success(let selected):
                loaded = selected
            case .failure(let error):
                throw CommandFailure(.invalid, "batchfetch: error: --only: \(error)")
            }
        }
        let policy = Preparation.policy(command)
        let lock: LockFile? = switch policy.lock {
        case .none: nil
        case .consulted, .compared: try lockOption.load(forManifest: argument.manifest, required: false)
        case .required: try lockOption.load(forManifest: argument.manifest, required: true)
        }
        var options = RunOptions()
        options.transportKind = transport
        let prepared = await Preparation.expand(loaded, for: command, lock: lock, transport: options.httpTransport(perHost: loaded.perHost),
                                                environment: environment)
        let expanded = prepared.manifest
        if policy.lock == .compared || policy.lock == .required, let lock {
            try lockOption.requireMatch(lock, forManifest: argument.manifest, expanded)
        } else if command == .verify, let lock {
            // A lock pinned under another key vouches for nothing here (Docs/Signatures.md).
            try lockOption.requireMatch(lock, forManifest: argument.manifest, expanded, signersOnly: true)
        }
        let (selected, scope, shardLock) = try shardOption?.select(expanded, lock: lock, environment: environment) ?? (expanded, nil, lock)
        return CommandPreparation(manifest: selected, lock: shardLock, scope: scope, failures: prepared.expansion.failures,
                                  resolved: prepared.expansion.resolved, drift: prepared.drift)
    }
}
