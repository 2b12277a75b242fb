import Foundation
import Testing

/// The schemas built into the binary are byte-identical to schemas/, and the examples validate
/// against the manifest schema with an independent validator (Python's jsonschema).
@Suite struct SchemaCommandTests {
    @Test(arguments: ["manifest", "report", "lock"])
    func schemaCommandPrintsTheRepositoryFile(name: String) async throws {
        let output = try await BinaryRunner.run(["schema", name])
        #expect(output.status == 0)
        let file = try String(contentsOf: BinaryRunner.repository.appendingPathComponent("schemas/\(name).schema.json"), encoding: .utf8)
        #expect(output.stdout == file, "run scripts/embed-schemas.sh after editing schemas/")
    }

    /// Every example manifest; `k8s-*.yaml` are Kubernetes objects that carry a manifest inside
    /// (checked by ShardingEndToEndTests).
    @Test func examplesValidateAgainstTheManifestSchema() async throws {
        let examples = try FileManager.default.contentsOfDirectory(atPath: BinaryRunner.repository.appendingPathComponent("examples").path)
            .filter { $0.hasSuffix(".yaml") && !$0.hasPrefix("k8s-") }.sorted()
        let (status, text) = try await BinaryRunner.validateWithSchema(
            ["--expect-valid", "schemas/manifest.schema.json"] + examples.map { "examples/\($0)" })
        #expect(status == 0, "\(text)")
        #expect(examples.count >= 5 && text.hasSuffix("\(examples.count) of \(examples.count) valid\n"), "\(text)")
    }

    @Test func schemaRejectsInvalidFixturesThatItCanExpress() async throws {
        let names = [
            "unknown-top-key", "unknown-job-key", "missing-version", "unsupported-version", "bad-id-characters",
            "dest-absolute", "checksum-unknown-algorithm", "checksum-wrong-length", "checksum-not-hex",
            "checksum-and-checksums-from", "segments-out-of-range", "concurrency-zero", "negative-size",
            "size-unknown-unit", "duration-without-unit", "url-and-urls", "body-without-post", "jobs-not-a-list",
            "wrong-types", "unsupported-scheme", "upload-with-download-keys", "upload-form-with-put", "upload-bad-form",
            "requests-per-second-not-a-count", "signature-malformed",
        ]
        let (status, text) = try await BinaryRunner.validateWithSchema(
            ["--expect-invalid", "schemas/manifest.schema.json"] + names.map { "Tests/Fixtures/invalid/\($0).yaml" })
        #expect(status == 0, "\(text)")
    }
}
