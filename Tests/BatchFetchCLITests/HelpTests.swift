import Foundation
import Testing

/// `--help` of every command matches its golden file in Tests/Fixtures/help. Regenerate with
/// `scripts/update-help-goldens.sh` after changing a command, and review the diff.
@Suite struct HelpTests {
    static let commands: [[String]] = [[], ["run"], ["validate"], ["plan"], ["check"], ["pin"], ["verify"], ["schema"]]

    @Test(arguments: commands)
    func helpMatchesGolden(command: [String]) throws {
        let output = try BinaryRunner.run(command + ["--help"], environment: ["COLUMNS": "100"])
        #expect(output.status == 0)
        let name = (["batchfetch"] + command).joined(separator: "-")
        let golden = try String(
            contentsOf: BinaryRunner.fixtures.appendingPathComponent("help/\(name).txt"), encoding: .utf8)
        #expect(output.stdout == golden)
    }

    @Test func versionIsPrinted() throws {
        let output = try BinaryRunner.run(["--version"])
        #expect(output.status == 0)
        #expect(output.stdout == "0.1.0\n")
    }
}
