import Foundation
import Testing

@Suite struct ValidateCommandTests {
    @Test func validManifestExitsZero() async throws {
        let output = try await BinaryRunner.run(["validate", "examples/quickstart.yaml"])
        #expect(output.status == 0)
        #expect(output.stdout == "examples/quickstart.yaml: valid (3 jobs, 2 levels)\n")
        #expect(output.stderr.isEmpty)
    }

    /// The README's `validate` example is what `validate` prints for the README's manifest.
    @Test func readmeValidateExampleIsTheRealOutput() async throws {
        let readme = try String(contentsOf: BinaryRunner.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let yamlStart = try #require(readme.range(of: "Given this `datasets.yaml`:\n\n```yaml\n"))
        let yamlEnd = try #require(readme.range(of: "```\n", range: yamlStart.upperBound..<readme.endIndex))
        let outputStart = try #require(readme.range(of: "$ batchfetch validate datasets.yaml\n", range: yamlEnd.upperBound..<readme.endIndex))
        let outputEnd = try #require(readme.range(of: "$ echo $?", range: outputStart.upperBound..<readme.endIndex))
        let directory = try TemporaryDirectory()
        try directory.write("datasets.yaml", String(readme[yamlStart.upperBound..<yamlEnd.lowerBound]))
        let output = try await BinaryRunner.run(["validate", "datasets.yaml"], in: directory.url)
        #expect(output.status == 2)
        #expect(output.stderr == String(readme[outputStart.upperBound..<outputEnd.lowerBound]))
    }

    @Test func invalidManifestListsEveryProblemAndExitsTwo() async throws {
        let output = try await BinaryRunner.run(["validate", "dependency-cycle.yaml"], in: BinaryRunner.fixtures.appendingPathComponent("invalid"))
        #expect(output.status == 2)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr == """
            dependency-cycle.yaml:5:18: error: dependency cycle: a -> c -> b -> a
            1 error in dependency-cycle.yaml

            """)
    }

    @Test func jsonFormatGivesProblemsAsObjects() async throws {
        let output = try await BinaryRunner.run(
            ["validate", "--format", "json", "concurrency-zero.yaml"], in: BinaryRunner.fixtures.appendingPathComponent("invalid"))
        #expect(output.status == 2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(object["valid"] as? Bool == false)
        let problems = try #require(object["problems"] as? [[String: Any]])
        #expect(problems.count == 2)
        #expect(problems[0]["file"] as? String == "concurrency-zero.yaml")
        #expect(problems[0]["line"] as? Int == 2)
        #expect(problems[0]["column"] as? Int == 14)
        #expect(problems[0]["message"] as? String == "'concurrency' must be from 1 to 1024, found 0")
        #expect(problems[1]["line"] as? Int == 3)
    }

    @Test func jsonFormatForAValidManifest() async throws {
        let output = try await BinaryRunner.run(["validate", "--format", "json", "examples/nightly-cron.yaml"])
        #expect(output.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(object["valid"] as? Bool == true)
        #expect(object["jobs"] as? Int == 4)
        #expect((object["problems"] as? [Any])?.isEmpty == true)
    }

    @Test func missingManifestExitsTwoWithAClearMessage() async throws {
        let output = try await BinaryRunner.run(["validate", "no-such.yaml"])
        #expect(output.status == 2)
        #expect(output.stderr == "batchfetch: error: cannot read manifest 'no-such.yaml': No such file or directory\n")
    }

    @Test func usageErrorsExitTwo() async throws {
        let unknownOption = try await BinaryRunner.run(["validate", "--frobnicate", "examples/quickstart.yaml"])
        #expect(unknownOption.status == 2)
        #expect(unknownOption.stderr.contains("Unknown option '--frobnicate'"))
        let badFormat = try await BinaryRunner.run(["validate", "--format", "xml", "examples/quickstart.yaml"])
        #expect(badFormat.status == 2)
        let noCommand = try await BinaryRunner.run(["frobnicate"])
        #expect(noCommand.status == 2)
    }

    @Test func environmentReachesTheManifest() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", "version: 1\njobs:\n  - {id: a, url: 'https://${HOST}/a.bin'}\n")
        let unset = try await BinaryRunner.run(["validate", "m.yaml"], in: directory.url)
        #expect(unset.status == 2)
        #expect(unset.stderr.contains("m.yaml:3:18: error: job 'a': 'url' uses environment variable 'HOST', which is not set"))
        let set = try await BinaryRunner.run(["validate", "m.yaml"], in: directory.url, environment: ["HOST": "h.example"])
        #expect(set.status == 0)
    }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> URL {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        return file
    }
}
