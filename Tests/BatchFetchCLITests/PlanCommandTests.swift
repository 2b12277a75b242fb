import Foundation
import Testing

@Suite struct PlanCommandTests {
    static let manifest = """
        version: 1
        output_dir: out
        jobs:
          - id: report
            url: https://h.example/report.pdf
            depends_on: [sums, data]
          - id: data
            urls: ["https://${HOST}/data.bin", "https://backup.example/data.bin"]
            dest: raw/data.bin
            size: 10
            checksums_from: sums
            headers: {Authorization: "Bearer ${TOKEN}"}
          - id: sums
            url: https://h.example/SHA256SUMS
            checksum: md5:acbd18db4cc2f85cedef654fccc4a4d8
        """
    static let environment = ["HOST": "hidden-host.example", "TOKEN": "hidden-token"]

    private func plan(_ format: String, prepare: (TemporaryDirectory) throws -> Void = { _ in }) async throws -> (BinaryRunner.Output, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", Self.manifest)
        try prepare(directory)
        let output = try await BinaryRunner.run(["plan", "--format", format, "m.yaml"], in: directory.url, environment: Self.environment)
        return (output, directory)
    }

    @Test func textShowsLevelsOrderAndLocalState() async throws {
        let (output, directory) = try await plan("text") { directory in
            try directory.write("out/SHA256SUMS", "abc")
            try directory.write("out/raw/data.bin.part", "12345")
        }
        #expect(output.status == 0)
        let root = directory.url.standardizedFileURL.path
        #expect(output.stdout == """
            plan for m.yaml: 3 jobs in 3 levels, output_dir \(root)/out
            level 0:
              sums -> SHA256SUMS  [exists: 3 bytes]
                  url      https://h.example/SHA256SUMS
                  checksum md5:acbd18db4cc2f85cedef654fccc4a4d8
            level 1:
              data -> raw/data.bin  [partial: 5 bytes in .part]
                  mirror 1 https://${HOST}/data.bin
                  mirror 2 https://backup.example/data.bin
                  size     10 bytes
                  checksum from the sum file of 'sums'
                  after    sums
            level 2:
              report -> report.pdf  [missing]
                  url      https://h.example/report.pdf
                  after    sums, data

            """)
    }

    /// A job with `extract:` says where its tree goes, in text and in json.
    @Test func anExtractJobSaysWhereItsTreeGoes() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: val, url: "https://h.example/val.tar.gz", dest: a/val.tar.gz, extract: {into: val, format: tar.gz, keep_archive: false}}
            """)
        let text = try await BinaryRunner.run(["plan", "m.yaml"], in: directory.url)
        let json = try await BinaryRunner.run(["plan", "--format", "json", "m.yaml"], in: directory.url)
        #expect(text.stdout.contains("      extract  into val (tar.gz), archive removed once unpacked\n"), "\(text.stdout)")
        #expect(json.stdout.contains("\"extract\": {\"format\": \"tar.gz\", \"into\": \"val\", \"keep_archive\": false}"), "\(json.stdout)")
    }

    @Test func jsonIsMachineReadableAndRedacted() async throws {
        let (output, _) = try await plan("json") { directory in
            try directory.write("out/raw/data.bin", "0123456789")
        }
        #expect(output.status == 0)
        #expect(!output.stdout.contains("hidden"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        #expect(object["jobs"] as? Int == 3)
        #expect(object["levels"] as? Int == 3)
        let order = try #require(object["order"] as? [[String: Any]])
        #expect(order.map { $0["id"] as? String } == ["sums", "data", "report"])
        #expect(order.map { $0["level"] as? Int } == [0, 1, 2])
        #expect(order[1]["urls"] as? [String] == ["https://${HOST}/data.bin", "https://backup.example/data.bin"])
        #expect(order[1]["depends_on"] as? [String] == ["sums"])
        let local = try #require(order[1]["local"] as? [String: Any])
        #expect(local["state"] as? String == "exists")
        #expect(local["bytes"] as? Int == 10)
        #expect(local["size_matches"] as? Bool == true)
        #expect((order[0]["checksums"] as? [String: String])?["md5"] == "acbd18db4cc2f85cedef654fccc4a4d8")
    }

    @Test func dotDrawsDependencyEdges() async throws {
        let (output, _) = try await plan("dot")
        #expect(output.status == 0)
        #expect(output.stdout.hasPrefix("digraph batchfetch {"))
        #expect(output.stdout.contains("  \"sums\" -> \"report\";\n"))
        #expect(output.stdout.contains("  \"data\" -> \"report\";\n"))
        #expect(output.stdout.contains("  \"sums\" -> \"data\";\n"))
    }

    @Test func invalidManifestExitsTwo() async throws {
        let output = try await BinaryRunner.run(["plan", "unknown-job-key.yaml"], in: BinaryRunner.fixtures.appendingPathComponent("invalid"))
        #expect(output.status == 2)
        #expect(output.stderr.hasPrefix("unknown-job-key.yaml:5:5: error: job 'train': unknown key 'checksumm'"))
    }
}
