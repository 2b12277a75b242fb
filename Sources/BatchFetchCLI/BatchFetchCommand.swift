import ArgumentParser
import BatchFetchSpec

/// The `batchfetch` root command; each subcommand lives in its own file.
public struct BatchFetchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "batchfetch",
        abstract: "Declarative batch downloads: validate, plan and fetch the files a YAML manifest lists.",
        discussion: HelpText.reflowed("""
            A manifest lists URLs, destinations, expected sizes, checksums, mirrors and dependencies.
            Start with `batchfetch validate datasets.yaml`, then `batchfetch plan datasets.yaml` and
            `batchfetch run datasets.yaml`. For reproducible fetches: `batchfetch pin` writes a
            lockfile, `run --locked` holds downloads to it, `verify` checks local files offline and
            `check` compares every mirror with it.

            Exit codes: 0 success, 1 jobs failed, 2 usage error or invalid manifest, 3 drift or lock
            mismatch, 4 another run holds the run lock, 130/143 interrupted.
            """),
        version: ToolVersion.description,
        subcommands: [RunCommand.self, ValidateCommand.self, PlanCommand.self, CheckCommand.self, PinCommand.self,
                      ImportCommand.self, AddCommand.self,
                      VerifyCommand.self, MergeReportsCommand.self, ReportCommand.self, SchemaCommand.self, CacheCommand.self]
    )

    public init() {}
}
