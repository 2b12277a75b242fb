import ArgumentParser

/// The process exit codes of Docs/Contracts.md §1, so scripts can tell outcomes apart.
public enum ExitStatus: Int32, Sendable {
    /// All jobs succeeded / the manifest is valid.
    case success = 0
    /// One or more jobs failed or were skipped because a dependency failed.
    case jobsFailed = 1
    /// Usage error or invalid manifest.
    case invalid = 2
    /// Drift or lock mismatch.
    case drift = 3
    /// Another run holds the run lock.
    case locked = 4

    var exitCode: ExitCode { ExitCode(rawValue) }
}
