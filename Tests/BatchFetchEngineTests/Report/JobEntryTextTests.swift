@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// The report entries written directly are the bytes `JSONEncoder` makes of them: random jobs
/// with every field present or absent, strings with quotes, backslashes, slashes, control
/// characters and other scripts, numbers at their limits.
@Suite struct JobEntryTextTests {
    /// What the report wrote before (``StableJSON``'s encoder, indented to the entry's place).
    static func encoded(_ job: RunReport.Job) throws -> [UInt8] {
        StableJSON.indented(try StableJSON.prettyEncoder().encode(job), depth: 2, indentFirstLine: true)
    }

    struct Random {
        var generator = SeededGenerator(seed: 5)

        mutating func chance() -> Bool { Bool.random(using: &generator) }

        mutating func string() -> String {
            let pieces = ["a", "Z", "0", "/", "\"", "\\", "\n", "\t", "\r", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}",
                          "é", "東京", "\u{2028}", "🙂", " ", "http://127.0.0.1:8080/x?y=1&z=/", "%41"]
            return (0..<Int.random(in: 0...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
        }

        mutating func maybe<T>(_ make: (inout Random) -> T) -> T? {
            chance() ? make(&self) : nil
        }

        mutating func double() -> Double {
            [0, 0.1, 1, 1e-7, 2.5e-5, 123456.789, 1e16, 1e21, .leastNonzeroMagnitude, Double.random(in: 0..<10_000, using: &generator),
             Double.random(in: 0..<1e-3, using: &generator)].randomElement(using: &generator)!
        }

        mutating func int64() -> Int64 {
            [0, 1, 4096, Int64.max, Int64.random(in: 0...Int64.max, using: &generator)].randomElement(using: &generator)!
        }

        mutating func job() -> RunReport.Job {
            let statuses: [JobResult.Status] = [.downloaded, .upToDate, .skipped, .uploaded, .failed, .interrupted, .ok, .drift]
            var result = JobResult(id: string(), status: statuses.randomElement(using: &generator)!, dest: string())
            result.url = maybe { $0.string() }
            result.mirrorIndex = maybe { _ in Int.random(in: 0...3) }
            result.redirects = chance() ? (0..<Int.random(in: 1...3, using: &generator)).map { _ in string() } : []
            result.size = maybe { $0.int64() }
            let algorithms = ["sha256", "md5", "sha1", "sha512", "sha384"]
            for algorithm in algorithms where chance() { result.checksums[algorithm] = string() }
            result.checksumVerified = maybe { $0.chance() }
            result.httpStatus = maybe { _ in Int.random(in: 100...599) }
            result.etag = maybe { $0.string() }
            result.lastModified = maybe { $0.string() }
            result.resumedFrom = maybe { $0.int64() }
            result.bytesTransferred = int64()
            result.segments = maybe { _ in Int.random(in: 1...16) }
            result.skippedBecause = maybe { $0.string() }
            result.deferredBecause = maybe { _ in Bool.random() ? .maxBytes : .maxDuration }
            result.copiedFrom = maybe { $0.string() }
            result.source = maybe { _ in ContentSource.allCases.randomElement()! }
            result.evidence = maybe { $0.string() }
            result.signedBy = maybe { Signer(kind: $0.string(), keyID: $0.maybe { $0.string() }, fingerprint: $0.maybe { $0.string() }) }
            result.checksumsSignedBy = maybe { Signer(kind: $0.string(), identity: $0.maybe { $0.string() }) }
            var job = RunReport.Job(result)
            job.attempts = maybe { _ in Int.random(in: 0...5) }
            job.durationSeconds = maybe { $0.double() }
            job.startedSeconds = maybe { $0.double() }
            return job
        }
    }

    @Test func randomEntriesAreTheEncodersBytes() throws {
        var random = Random()
        for _ in 0..<3_000 {
            var job = random.job()
            if random.chance() { job.kind = "upload" }
            let direct = try #require(JobEntryText.entry(job))
            let expected = try Self.encoded(job)
            #expect(direct == expected, "\(String(decoding: direct, as: UTF8.self))\n---\n\(String(decoding: expected, as: UTF8.self))")
            if direct != expected { return }
        }
    }

    /// Every field of an entry is written: a job with all of them set (but the nested ones) is the
    /// encoder's bytes. A field added to `RunReport.Job` and not to ``JobEntryText`` fails here,
    /// where the job below no longer has every field set.
    @Test func anEntryWithEveryFieldIsTheEncodersBytes() throws {
        // Every field set, but a failure (whose entry the encoder writes).
        var result = ReportSchemaKeysTests.fullResult()
        result.status = .downloaded
        result.failure = nil
        result.httpStatus = 200
        result.attempts = [AttemptRecord(mirrorIndex: 1, url: "http://127.0.0.1/all.bin", httpStatus: 200, failure: nil, waited: 0)]
        var job = RunReport.Job(result)
        job.kind = "upload"
        let withTree = job
        job.extracted = nil
        let withMirrors = job
        job.mirrorsUsed = nil
        let unset = Swift.Mirror(reflecting: job).children.filter { child in
            guard let optional = child.value as? any OptionalProtocol else { return false }
            return optional.isNone && !["error", "mirrors", "attemptLog", "extracted", "mirrorsUsed"].contains(child.label ?? "")
        }.map { $0.label ?? "?" }
        #expect(unset.isEmpty, "fields JobEntryText may not write: \(unset)")
        #expect(try #require(JobEntryText.entry(job)) == (try Self.encoded(job)))
        #expect(JobEntryText.entry(withTree) == nil, "an extracted tree is left to the encoder")
        #expect(JobEntryText.entry(withMirrors) == nil, "mirrors_used is left to the encoder")
    }

    /// Entries with nested values are left to the encoder.
    @Test func entriesWithErrorsAttemptsOrMirrorsAreNotWrittenDirectly() {
        var random = Random()
        var failed = random.job()
        failed.error = RunReport.JobError(code: .httpStatus, message: "HTTP 503", attempts: nil)
        var retried = random.job()
        retried.attemptLog = []
        var checked = random.job()
        checked.mirrors = []
        #expect(JobEntryText.entry(failed) == nil)
        #expect(JobEntryText.entry(retried) == nil)
        #expect(JobEntryText.entry(checked) == nil)
    }
}

/// Lets the test above ask whether a reflected optional is nil.
protocol OptionalProtocol {
    var isNone: Bool { get }
}

extension Optional: OptionalProtocol {
    var isNone: Bool { self == nil }
}
