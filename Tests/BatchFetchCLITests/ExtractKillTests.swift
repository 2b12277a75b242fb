import Foundation
import Testing
import TestOrigin

/// The built binary SIGKILLed while it unpacks a new archive over an old tree, at a random
/// instant once the unpacking has begun (its temporary sibling exists): `into` is the whole old
/// tree, never a mix, and the rerun puts the whole new one in place and leaves no temporary
/// sibling behind (Docs/Archives.md, "Atomic and idempotent").
@Suite(.serialized) struct ExtractKillTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/archives/make-archive.py").standardized.path

    static func archive(_ name: String, in directory: TemporaryDirectory) async throws -> [UInt8] {
        let out = directory.url.appendingPathComponent("\(name).tar.gz").path
        let made = try await ToolRun.run(["python3", Self.script, name, out])
        try #require(made.status == 0, "make-archive.py \(name) failed")
        defer { try? FileManager.default.removeItem(atPath: out) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    /// What `tree` holds: each regular file's relative path with its first line.
    static func contents(of tree: URL) -> [String: String] {
        var found: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(at: tree, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
            found[String(url.path.dropFirst(tree.path.count + 1))] = String(text.prefix { $0 != "\n" })
        }
        return found
    }

    @Test func aKillDuringTheSwapLeavesTheOldTreeOrTheNewOneNeverAMix() async throws {
        let directory = try TemporaryDirectory()
        let origin = try await TestOrigin.start()
        let old = try await Self.archive("many-files-old", in: directory)
        let new = try await Self.archive("many-files-new", in: directory)
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            defaults: {refresh: always}
            jobs:
              - {id: data, url: "\(origin.url("/data.tar.gz"))", dest: data.tar.gz, extract: {into: trees/t}}
            """)
        let tree = directory.url.appendingPathComponent("out/trees/t")
        let parent = directory.url.appendingPathComponent("out/trees").path
        var outcomes: [String] = []
        for attempt in 0..<2 {
            origin.serve("/data.tar.gz", OriginFile(content: .bytes(old)))
            let first = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
            try #require(first.status == 0, "\(first.stderr)")
            let oldTree = Self.contents(of: tree)
            try #require(oldTree.count == 6_000 && oldTree.values.allSatisfy { $0.hasPrefix("old ") })

            origin.serve("/data.tar.gz", OriginFile(content: .bytes(new)))
            let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
            // A random instant once the unpacking has begun: its temporary sibling is there.
            let delay = [0.0, 0.1][attempt]
            let began = await BinaryRunner.signal(SIGKILL, to: process) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
                guard names.contains(where: { $0.hasPrefix(".t.") }) else { return false }
                Thread.sleep(forTimeInterval: delay)
                return true
            }
            await BinaryRunner.exit(of: process)
            #expect(began, "the unpacking never began")
            let afterKill = Self.contents(of: tree)
            let whole = afterKill == oldTree ? "old" : afterKill.count == 6_001 && afterKill["NEW"] != nil
                && afterKill.filter({ $0.key != "NEW" }).values.allSatisfy({ $0.hasPrefix("new ") }) ? "new" : "mixed"
            outcomes.append(whole)
            #expect(whole != "mixed", "attempt \(attempt): \(afterKill.count) files")

            let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
            let final = Self.contents(of: tree)
            let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []).filter { $0 != "t" }
            #expect(rerun.status == 0, "\(rerun.stderr)")
            #expect(final.count == 6_001 && final["NEW"] == "the new tree", "attempt \(attempt)")
            #expect(final.filter { $0.key != "NEW" }.values.allSatisfy { $0.hasPrefix("new ") })
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
        try await origin.shutdown()
        // At least one kill landed before the swap (the tree was still the old one): the case
        // the test is for. The unpacking takes about a second; the larger delay is 0.1 s.
        #expect(outcomes.contains("old"), "\(outcomes)")
    }
}
