import BatchFetchSpec
import Foundation
import Testing

/// Every manifest in Tests/Fixtures/invalid is rejected with exactly the messages and locations in
/// its `.expected` file.
@Suite struct InvalidManifestFixtureTests {
    static let fixtureNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.invalid.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted()
    }()

    @Test func thereAreAtLeastTwentyFiveFixtures() {
        #expect(Self.fixtureNames.count >= 25)
    }

    @Test(arguments: fixtureNames)
    func fixtureIsRejectedWithExpectedMessages(name: String) throws {
        let path = Fixtures.invalid.appendingPathComponent(name).path
        let expectedPath = String(path.dropLast(".yaml".count)) + ".expected"
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
            .split(separator: "\n").map(String.init)
        #expect(!expected.isEmpty, "fixture \(name) has no expectations")

        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let loader = ManifestLoader(environment: Fixtures.environment)
        do {
            _ = try loader.load(bytes: bytes, displayPath: name, baseDirectory: Fixtures.invalid.path)
            Issue.record("\(name) was accepted")
        } catch .invalid(let diagnostics) {
            #expect(diagnostics.map(\.description) == expected)
        } catch {
            Issue.record("\(name): unexpected \(error)")
        }
    }

    @Test func fileOverSixtyFourMiBIsRejectedBeforeReading() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("huge.yaml").path
        try #require(FileManager.default.createFile(atPath: path, contents: Data("version: 1\n".utf8)))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 513 * 1024 * 1024)  // sparse: costs no disk
        try handle.close()

        do {
            _ = try ManifestLoader(environment: [:]).load(path: path)
            Issue.record("a 513 MiB manifest was accepted")
        } catch .invalid(let diagnostics) {
            #expect(diagnostics.map(\.description) == ["\(path):1:1: error: file is 513.0 MiB; manifests are limited to 512 MiB"])
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func missingFileIsUnreadableNotInvalid() {
        do {
            _ = try ManifestLoader(environment: [:]).load(path: "/nonexistent/manifest.yaml")
            Issue.record("loaded a missing file")
        } catch .unreadable(let path, let reason) {
            #expect(path == "/nonexistent/manifest.yaml")
            #expect(reason.contains("No such file"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
