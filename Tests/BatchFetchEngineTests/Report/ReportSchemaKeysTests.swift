@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The keys the report and lockfile encoders write are the keys schemas/report.schema.json and
/// schemas/lock.schema.json describe, in both directions, at every level: a value with every
/// optional field set is encoded, and each object's keys must equal its schema's properties.
/// A field added to the encoder and not the schema (or the other way round) fails here.
@Suite struct ReportSchemaKeysTests {
    static func schema(_ name: String) -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("schemas/\(name)")
        let data = (try? Data(contentsOf: url)) ?? Data()
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    /// Where an encoded value's keys differ from its schema's properties, by JSON path.
    static func mismatches(_ value: Any, _ node: [String: Any], root: [String: Any], path: String = "$") -> [String] {
        var node = node
        if let reference = node["$ref"] as? String, reference.hasPrefix("#/$defs/") {
            node = ((root["$defs"] as? [String: Any])?[String(reference.dropFirst("#/$defs/".count))] as? [String: Any]) ?? [:]
        }
        var found: [String] = []
        if let object = value as? [String: Any] {
            if let properties = node["properties"] as? [String: Any] {
                let encoded = Set(object.keys), described = Set(properties.keys)
                if encoded != described {
                    found.append("\(path): encoded but not in the schema \(encoded.subtracting(described).sorted()), "
                        + "in the schema but not encoded \(described.subtracting(encoded).sorted())")
                }
                for (key, child) in object {
                    if let schema = properties[key] as? [String: Any] {
                        found += mismatches(child, schema, root: root, path: "\(path).\(key)")
                    }
                }
            } else if let each = node["additionalProperties"] as? [String: Any] {
                for (key, child) in object { found += mismatches(child, each, root: root, path: "\(path)[\(key)]") }
            }
        } else if let array = value as? [Any], let items = node["items"] as? [String: Any] {
            for (index, child) in array.enumerated() { found += mismatches(child, items, root: root, path: "\(path)[\(index)]") }
        }
        return found
    }

    /// A failed job's result with every field set (the report's entry tests start from it too).
    static func fullResult() -> JobResult {
        var result = JobResult(id: "all", status: .failed, dest: "d/all.bin")
        result.url = "http://127.0.0.1/all.bin"
        result.mirrorIndex = 1
        result.redirects = ["http://127.0.0.1/r"]
        result.size = 4096
        // Every algorithm the schema names.
        for (algorithm, length) in [("sha256", 64), ("md5", 32), ("sha1", 40), ("sha512", 128)] {
            result.checksums[algorithm] = String(repeating: "a", count: length)
        }
        result.checksumVerified = true
        result.httpStatus = 503
        result.etag = "\"e\""
        result.lastModified = "Tue, 24 Nov 2026 02:00:00 GMT"
        let failure = BatchFetchError(.httpStatus, "HTTP 503")
        result.attempts = [AttemptRecord(mirrorIndex: 1, url: "http://127.0.0.1/all.bin", httpStatus: 503, failure: failure, waited: 1,
                                         piece: AttemptRecord.Piece(index: 2, bytes: 8..<12))]
        result.failure = failure
        result.resumedFrom = 100
        result.bytesTransferred = 3996
        result.segments = 4
        result.piecesRepaired = 2
        result.hedged = 1
        result.mirrorsUsed = [0, 1]
        result.duration = 0.25
        result.startedAfter = 1.5
        result.skippedBecause = "not really"
        result.deferredBecause = .maxDuration
        result.copiedFrom = "twin"
        result.source = .link
        result.extracted = Extraction(into: "tree", format: "tar.gz", files: 3, bytes: 12, repaired: 1, streamed: true)
        result.evidence = "ETag"
        result.signedBy = everySignerField
        result.checksumsSignedBy = everySignerField
        return result
    }

    /// A job with every field of the report set, nested ones included.
    static func fullJob() -> RunReport.Job {
        var job = RunReport.Job(fullResult())
        job.kind = "upload"
        // A failed job carries its attempts in `error`; a job that succeeded after retries in
        // `attempt_log`. One entry shows both, to cover both keys.
        job.attemptLog = job.error?.attempts
        var mirror = MirrorCheck(
            mirrorIndex: 0, url: "http://127.0.0.1/all.bin",
            observation: MirrorObservation(outcome: .answered, httpStatus: 200, method: "HEAD", size: 4096, etag: "\"e\"",
                                           lastModified: "Tue, 24 Nov 2026 02:00:00 GMT", sha256: String(repeating: "b", count: 64)),
            verdict: MirrorVerdict(status: .drift, differences: [.init(field: "size", expected: "1", actual: "4096")]))
        mirror.message = "why"
        job.mirrors = [mirror]
        return job
    }

    @Test func theReportsKeysAreTheSchemas() throws {
        var report = try ReportJournalTests.report([Self.fullJob()])
        report.mergedFrom = ["a.json"]
        report.jobsReported = .changed
        report.manifest.lists = [.init(path: "urls.csv", sha256: String(repeating: "c", count: 64))]
        report.summary.uploaded = 1
        report.summary.fromCache = 1
        report.summary.deferred = 1
        report.hooks = [HookRecord(event: "on_failure", action: "url", ok: false, status: 500, exitCode: 3, error: "HTTP 500")]
        report.summary.ok = 1
        report.summary.drift = 1
        report.summary.missing = 1
        report.summary.unreachable = 1
        let job = Self.fullJob()
        let unset = Swift.Mirror(reflecting: job).children.filter { ($0.value as? any OptionalProtocol)?.isNone ?? false }
        #expect(unset.isEmpty, "fields left out of the test's job: \(unset.map { $0.label ?? "?" })")
        #expect(job.attemptLog?.first?.code != nil && job.error?.attempts != nil)

        let encoded = try JSONSerialization.jsonObject(with: try StableJSON.prettyEncoder().encode(report))
        let schema = Self.schema("report.schema.json")
        #expect(!schema.isEmpty)
        let found = Self.mismatches(encoded, schema, root: schema)
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// A signer with every field set (one of them is, in a real report): the schema's keys.
    static let everySignerField = Signer(kind: "minisign", keyID: "0123456789ABCDEF", fingerprint: String(repeating: "AB", count: 20),
                                         identity: "release@example.org")

    @Test func theLockfilesKeysAreTheSchemas() throws {
        let lock = LockFile(manifest: "m.yaml", jobs: ["a": .init(
            dest: "a.bin", size: 1, sha256: String(repeating: "a", count: 64),
            mirrors: [.init(url: "http://127.0.0.1/a", size: 1, etag: "\"e\"", lastModified: "Tue, 24 Nov 2026 02:00:00 GMT",
                            sha256: String(repeating: "a", count: 64))],
                                         checksums: ["git-sha1": String(repeating: "b", count: 40)],
                                         signedBy: Self.everySignerField,
                                         pieces: PieceHashes(length: 262_144, sha256: [String(repeating: "c", count: 64)]))],
                            sources: ["src": .init(source: "hf://acme/tiny", revision: String(repeating: "1", count: 40))])
        let encoded = try JSONSerialization.jsonObject(with: try StableJSON.prettyEncoder().encode(lock))
        let schema = Self.schema("lock.schema.json")
        #expect(!schema.isEmpty)
        let found = Self.mismatches(encoded, schema, root: schema)
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// The walk finds a key the schema does not have (the test above can fail).
    @Test func anUndescribedKeyIsFound() {
        let schema: [String: Any] = ["properties": ["a": ["type": "string"]]]
        #expect(Self.mismatches(["a": "x", "b": "y"], schema, root: schema).count == 1)
        #expect(Self.mismatches([String: Any](), schema, root: schema).count == 1)
    }
}
