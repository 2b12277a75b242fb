import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// The one preparation every command goes through before it builds its graph (Docs/Sources.md,
/// "The preparation pipeline"): load and validate → **expand listings** (bucket prefixes and
/// sources) → apply the lock → select the shard → build the graph. This type owns the middle
/// step and the table of what each command may do there; the CLI's `CommandPreparation` runs
/// the steps around it in that order, so no command lists, reads the lock or shards its own way.
package enum Preparation {
    /// The commands, as far as preparation tells them apart.
    package enum Command: String, Sendable, CaseIterable {
        case run, runLocked = "run --locked", dryRun = "run --dry-run", plan, planLocked = "plan --locked", pin, check, verify
    }

    /// How a command expands listing jobs.
    package enum Listing: Sendable, Equatable {
        /// List every source and prefix now (network).
        case list
        /// Expand from the lockfile only, offline: exactly what was pinned.
        case lock
        /// List now, and compare with the lockfile when there is one (`check`): the lock's
        /// files are checked, and what the listing adds, removes or changes is drift.
        case listAndCompare
        /// Offline: from the lockfile when there is one; without one, a listing job fails saying
        /// it needs `pin` (`verify`, a dry run).
        case offline
    }

    /// How a command uses the lockfile.
    package enum LockUse: Sendable, Equatable {
        /// Not read.
        case none
        /// Read when it exists; it need not list the manifest's jobs.
        case consulted
        /// Read when it exists; it must list exactly the manifest's jobs (else exit 3).
        case compared
        /// Must exist and list exactly the manifest's jobs (else exit 2 or 3).
        case required
    }

    /// What a command may do: the one table (Docs/Sources.md has it in words).
    package static func policy(_ command: Command) -> (listing: Listing, lock: LockUse) {
        switch command {
        case .run, .plan, .pin: (.list, .none)
        case .runLocked, .planLocked: (.lock, .required)
        case .dryRun: (.offline, .consulted)
        case .check: (.listAndCompare, .compared)
        case .verify: (.offline, .consulted)
        }
    }

    /// The manifest with every listing job expanded as `command` may, given the lockfile read
    /// per ``policy(_:)``. Makes no request unless the table says the command lists, and then
    /// only when the manifest has a listing job.
    package static func expand(_ manifest: Manifest, for command: Command, lock: LockFile?, transport: @autoclosure () -> any HTTPTransport,
                              environment: [String: String]) async -> Prepared {
        guard manifest.jobs.contains(where: { $0.listing != nil }) else { return Prepared(expansion: ListingExpansion(manifest: manifest)) }
        switch policy(command).listing {
        case .list:
            return Prepared(expansion: await ListingExpansion.expand(manifest, transport: transport(), environment: environment))
        case .lock, .offline:
            guard let lock else {
                return Prepared(expansion: ListingExpansion.unexpanded(manifest, failure: BatchFetchError(
                    .lockMismatch, "its files are known only once pinned: run batchfetch pin (no lockfile)")))
            }
            return Prepared(expansion: ListingExpansion.expand(manifest, lock: lock, environment: environment))
        case .listAndCompare:
            let listed = await ListingExpansion.expand(manifest, transport: transport(), environment: environment)
            guard let lock else { return Prepared(expansion: listed) }
            var drift = listed.drift(since: lock, original: manifest)
            // A listing that failed is reported on the source job, not as all its files gone.
            let ids = Set(manifest.jobs.map(\.id))
            drift.unlisted = listed.failures.filter { ids.contains($0.key) }
            return Prepared(expansion: ListingExpansion.expand(manifest, lock: lock, environment: environment), drift: drift)
        }
    }

    /// A manifest ready for the rest of preparation.
    package struct Prepared: Sendable {
        package var expansion: ListingExpansion
        /// `check` against a lockfile: what the listing added, removed or changed.
        package var drift = ListingDrift()

        package var manifest: Manifest { expansion.manifest }
    }
}
