import Foundation
import ArgumentParser
import BatchFetchEngine
import BatchFetchNetwork
import BatchFetchSpec

/// The manifest argument shared by every subcommand that reads one.
struct ManifestArgument: ParsableArguments {
    @Argument(help: "Path to the manifest (YAML, version 1).", completion: .file(extensions: ["yaml", "yml"]))
    var manifest: String

    /// Loads the manifest, or prints every problem to stderr and exits 2.
    func load() throws -> Manifest {
        try Self.load(path: manifest)
    }

    /// Loads the manifest at `path`, or prints every problem to stderr and exits 2.
    static func load(path: String) throws -> Manifest {
        do {
            return try ManifestLoader().load(path: path)
        } catch {
            DiagnosticPrinter.print(error)
            throw CommandFailure(.invalid)
        }
    }
}

/// `--lock PATH` and loading the lockfile (default `<manifest>.lock.json`).
struct LockOption: ParsableArguments {
    @Option(help: "The lockfile (default: the manifest's path with .lock.json for its extension).", completion: .file(extensions: ["json"]))
    var lock: String?

    func path(forManifest manifest: String) -> String {
        lock ?? LockFile.defaultPath(forManifest: manifest)
    }

    /// Exits 3 unless `lock` lists exactly the (expanded) manifest's jobs with the signers its
    /// keys accept (or, `signersOnly`, only the latter: `verify`), printing each difference.
    func requireMatch(_ lock: LockFile, forManifest path: String, _ manifest: Manifest, signersOnly: Bool = false) throws {
        let mismatch = signersOnly ? lock.signerMismatch(with: manifest) : lock.mismatch(with: manifest)
        if !mismatch.isEmpty {
            for line in mismatch { Console.error("batchfetch: lock \(self.path(forManifest: path)): \(line)") }
            throw CommandFailure(.drift, "batchfetch: error: the lockfile does not match the manifest; run batchfetch pin to update it")
        }
    }

    /// The lockfile; a missing one is nil unless `required`; an unreadable one exits 2.
    func load(forManifest manifest: String, required: Bool) throws -> LockFile? {
        let path = path(forManifest: manifest)
        let loaded: LockFile
        do {
            loaded = try LockFile.load(path: path)
        } catch .missing where !required && lock == nil {
            return nil
        } catch {
            throw CommandFailure(.invalid, "batchfetch: error: \(error)")
        }
        // Piece hashes that cannot be the file's are refused before any request.
        if let problem = loaded.pieceProblems.first {
            throw CommandFailure(.invalid, "batchfetch: error: lock \(path): \(problem)")
        }
        return loaded
    }
}

/// `--transport urlsession|nio`: the HTTP client of a command that talks to the network, as
/// `BATCHFETCH_TRANSPORT` chooses it; the flag wins. URLSession stays the default: the product
/// is specified on it (Docs/Contracts.md §5). A value that names neither is a usage error, from
/// the flag or the variable: a typo must not silently run on the other client. An empty variable
/// is no choice (`BATCHFETCH_TRANSPORT= batchfetch run …`), as for the proxy variables.
struct TransportOption: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The HTTP client: urlsession (default; FoundationNetworking) or nio (SwiftNIO's AsyncHTTPClient). Overrides BATCHFETCH_TRANSPORT.",
        valueName: "client"))
    var transport: TransportKind?

    func validate() throws {
        if transport == nil, let value = ProcessInfo.processInfo.environment["BATCHFETCH_TRANSPORT"], !value.isEmpty,
           TransportKind(rawValue: value) == nil {
            throw ValidationError("BATCHFETCH_TRANSPORT is '\(value)'; expected urlsession or nio")
        }
    }

    /// The client to use: the flag's, else the environment's, else URLSession.
    var kind: TransportKind {
        transport ?? .default
    }
}

extension TransportKind: ExpressibleByArgument {}

/// `--cache` and `--no-cache`: which content cache a run uses (Docs/Cache.md).
struct CacheOption: ParsableArguments {
    @Option(help: ArgumentHelp("The content cache directory (overrides BATCHFETCH_CACHE and the manifest's cache:).",
                               valueName: "dir"), completion: .directory)
    var cache: String?

    @Flag(name: .customLong("no-cache"), help: "Use no content cache, whatever the manifest or BATCHFETCH_CACHE says.")
    var noCache = false

    func validate() throws {
        if noCache && cache != nil { throw ValidationError("--cache and --no-cache cannot be combined") }
    }

    /// The cache directory: `--cache`, else `BATCHFETCH_CACHE`, else the manifest's `cache:`;
    /// nil with `--no-cache` or none of them.
    func directory(for manifest: Manifest, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard !noCache else { return nil }
        if let cache { return cache }
        if let value = environment["BATCHFETCH_CACHE"], !value.isEmpty { return value }
        return manifest.cache
    }
}
