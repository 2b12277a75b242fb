import Foundation
import Testing

/// `--help` of every command matches its golden file in Tests/Fixtures/help. Regenerate with
/// `scripts/update-help-goldens.sh` after changing a command, and review the diff.
@Suite struct HelpTests {
    static let commands: [[String]] = [[], ["run"], ["validate"], ["plan"], ["check"], ["pin"], ["verify"], ["import"], ["add"], ["report"], ["schema"], ["cache"]]

    @Test(arguments: commands)
    func helpMatchesGolden(command: [String]) async throws {
        let output = try await BinaryRunner.run(command + ["--help"], environment: ["COLUMNS": "100"])
        #expect(output.status == 0)
        let name = (["batchfetch"] + command).joined(separator: "-")
        let golden = try String(
            contentsOf: BinaryRunner.fixtures.appendingPathComponent("help/\(name).txt"), encoding: .utf8)
        #expect(output.stdout == golden)
    }

    /// In an 80-column terminal (the parser wraps at 79) every paragraph wraps greedily: no line
    /// is longer than 80, and none breaks early where the next word would have fit (the ragged
    /// look of text wrapped twice).
    @Test(arguments: commands)
    func helpWrapsCleanlyInEightyColumns(command: [String]) async throws {
        let output = try await BinaryRunner.run(command + ["--help"], environment: ["COLUMNS": "80"])
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines.filter { $0.count > 80 })")
        let prose = lines.prefix { !$0.hasPrefix("USAGE:") }
        for (line, next) in zip(prose, prose.dropFirst()) where !line.isEmpty && !next.isEmpty
            && !line.hasPrefix(" ") && !next.hasPrefix(" ") && !line.hasSuffix(":") {
            let word = next.split(separator: " ").first.map(String.init) ?? ""
            #expect(line.count + 1 + word.count >= 80, "'\(line)' breaks before '\(word)'")
        }
    }

    @Test func unknownCommandsAreNamedWithASuggestion() async throws {
        let output = try await BinaryRunner.run(["rnu", "m.yaml"])
        #expect(output.status == 2)
        #expect(output.stderr == "batchfetch: unknown command 'rnu' (did you mean 'run'?); the commands are run, validate, plan, check, pin, import, add, verify, merge-reports, report, schema, cache (see 'batchfetch --help')\n")
    }

    @Test func shellCompletionOffersManifestFiles() async throws {
        let output = try await BinaryRunner.run(["--generate-completion-script", "bash"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("-fX '!*.@(yaml|yml)'"))
    }

    @Test func versionIsPrinted() async throws {
        let output = try await BinaryRunner.run(["--version"])
        #expect(output.status == 0)
        #expect(output.stdout == "0.1.0\n")
    }
}
