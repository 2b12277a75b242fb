/// batchfetch's version, once: `--version`, the report's `tool.version` and the User-Agent.
///
/// It is the repository's `VERSION` file, which `make dist` also names the archives from;
/// `ToolVersionTests` holds the two equal (a Swift package cannot read a file into a constant at
/// build time without a plugin, and a test is the simpler keeper).
package enum ToolVersion {
    package static let current = "0.1.0"

    /// The commit a release binary was built from: scripts/dist.sh writes it into
    /// `BuildCommit.swift` for the release build and puts the file back afterwards; nil in a
    /// development build.
    package static let commit: String? = buildCommit

    /// What `batchfetch --version` prints: the version, then the commit when there is one.
    package static var description: String {
        current + (commit.map { " (commit \($0))" } ?? "")
    }
}
