import ArgumentParser
import BatchFetchSpec

/// The manifest argument shared by every subcommand that reads one.
struct ManifestArgument: ParsableArguments {
    @Argument(help: "Path to the manifest (YAML, version 1).")
    var manifest: String

    /// Loads the manifest, or prints every problem to stderr and exits 2.
    func load() throws -> Manifest {
        do {
            return try ManifestLoader().load(path: manifest)
        } catch {
            DiagnosticPrinter.print(error)
            throw ExitStatus.invalid.exitCode
        }
    }
}
