@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Upload jobs against TestOrigin's receiver, on the transport under test: what goes on the
/// wire, the evidence for `up_to_date`, and the faults — a connection dropped mid-body (PUT
/// retried, POST not), 503 with Retry-After, 413, a redirect to another origin, a lying store.
@Suite struct UploadTests {
    static let size: Int64 = 3 << 20
    static let content = OriginContent.generated(size: size, seed: 77)

    /// A manifest that downloads `/src.bin` and uploads it to `path` (job keys in `extra`).
    static func fetchAndPush(_ path: String, extra: String = "", defaults: String = "retries: 2, backoff: 50ms, backoff_max: 200ms, timeout: 60s") -> String {
        """
        version: 1
        defaults: {\(defaults)}
        jobs:
          - id: fetch
            url: {origin}/src.bin
            dest: data/src.bin
          - id: push
            upload: data/src.bin
            url: {origin}\(path)
            depends_on: [fetch]
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    static func world() async throws -> Harness {
        let world = try await Harness()
        world.origin.serve("/src.bin", OriginFile(content: content))
        return world
    }

    @Test func aPutSendsTheVerifiedFileWithItsLengthAndDigest() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin")
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        let uploads = world.origin.uploads("/store/src.bin")
        let local = try world.sha256(ofFile: "data/src.bin")
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .uploaded, "\(String(describing: push.error))")
        #expect(push.kind == "upload")
        #expect(push.httpStatus == 201)
        #expect(push.size == Self.size && push.bytesTransferred == Self.size)
        #expect(push.checksums?["sha256"] == Harness.sha256(Self.content))
        #expect(report.summary.uploaded == 1 && report.summary.downloaded == 1)
        try #require(uploads.count == 1)
        let received = uploads[0]
        #expect(received.method == "PUT" && received.complete)
        #expect(received.bytes == Self.size && received.sha256 == local)
        #expect(received.header("Content-Length") == "\(Self.size)")
        #expect(received.header("Transfer-Encoding") == nil)
        #expect(received.header("Content-Digest") == UploadRules.contentDigest(sha256: local))
        #expect(push.etag == received.header("ETag") ?? "\"\(local.prefix(16))\"")
    }

    /// Cron reruns: the second run sends nothing when the target shows the same size and the
    /// ETag recorded after the first upload (or a matching digest); `refresh: always` sends again.
    @Test(arguments: ["etag", "etag-after-head", "digest"])
    func aRerunIsUpToDateByTheTargetsEvidence(evidence: String) async throws {
        let world = try await Self.world()
        var receiver = OriginReceiver()
        receiver.omitsETagOnUpload = evidence == "etag-after-head"
        receiver.reprDigest = evidence == "digest"
        world.origin.receive("/store/src.bin", receiver)
        let manifest = Self.fetchAndPush("/store/src.bin")
        let first = try await world.run(manifest)
        let second = try await world.run(manifest)
        let afterSecond = world.origin.uploads("/store/src.bin").count
        let third = try await world.run(manifest.replacingOccurrences(of: "timeout: 60s", with: "timeout: 60s, refresh: always"))
        let afterThird = world.origin.uploads("/store/src.bin").count
        await world.close()

        #expect(first.jobs[1].status == .uploaded)
        #expect(first.jobs[1].checksumVerified == (evidence == "digest" ? true : nil))
        #expect(second.jobs[1].status == .upToDate, "\(String(describing: second.jobs[1].error))")
        #expect(second.jobs[1].evidence?.contains(evidence == "digest" ? "digest" : "ETag") == true, "\(second.jobs[1].evidence ?? "")")
        #expect(afterSecond == 1)
        #expect(third.jobs[1].status == .uploaded)
        #expect(afterThird == 2)
    }

    /// A target that holds other bytes of the same size is sent the file: a size is no evidence.
    @Test func aSameSizedDifferentObjectIsReplaced() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin")
        let manifest = Self.fetchAndPush("/store/src.bin")
        _ = try await world.run(manifest)
        // Another writer replaces the stored object with other bytes of the same size.
        try Data(OriginContent.generated(size: Self.size, seed: 5).allBytes).write(to: URL(fileURLWithPath: world.path("other.bin")))
        _ = try await world.run("""
            version: 1
            jobs:
              - {id: other, upload: other.bin, url: "{origin}/store/src.bin", refresh: always}
            """)
        let report = try await world.run(manifest)
        let uploads = world.origin.uploads("/store/src.bin")
        await world.close()

        #expect(report.jobs[1].status == .uploaded)
        #expect(uploads.count == 3)
        #expect(uploads.last?.sha256 == Harness.sha256(Self.content))
    }

    @Test func aPostSendsAMultipartFormThatAStandardParserReads() async throws {
        let world = try await Self.world()
        world.origin.receive("/api/files")
        let report = try await world.run(Self.fetchAndPush("/api/files", extra: """
            method: POST
            form:
              file_field: dataset
              file_name: train.bin
              content_type: application/x-train
              fields: {split: train, token: "${FORM_TOKEN}"}
            """), environment: ["FORM_TOKEN": "s3cr3t-value"])
        let uploads = world.origin.uploads("/api/files")
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .uploaded, "\(String(describing: push.error))")
        try #require(uploads.count == 1)
        let received = uploads[0]
        let contentType = try #require(received.header("Content-Type"))
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        #expect(received.header("Content-Length") == "\(received.bytes)")
        let parts = try await FormParser.parse(Data(received.prefix), contentType: contentType)
        #expect(parts.map(\.name) == ["split", "token", "dataset"])
        #expect(parts[0].text == "train" && parts[1].text == "s3cr3t-value")
        #expect(parts[2].fileName == "train.bin" && parts[2].contentType == "application/x-train")
        #expect(parts[2].size == Int(Self.size) && parts[2].sha256 == Harness.sha256(Self.content))
        // The token went to the server, never into the report.
        let text = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!text.contains("s3cr3t-value"))
    }

    /// An API endpoint has nothing to ask: a POST is up to date when an earlier run posted the
    /// same, unchanged file to the same URL; a changed file, or `refresh: always`, posts again.
    @Test func aPostIsSentOncePerFileUnlessRefreshIsAlways() async throws {
        let world = try await Self.world()
        world.origin.receive("/api/files")
        let manifest = Self.fetchAndPush("/api/files", extra: "method: POST")
        let first = try await world.run(manifest)
        let second = try await world.run(manifest)
        let afterSecond = world.origin.uploads("/api/files").count
        world.origin.replace("/src.bin", with: .generated(size: Self.size, seed: 78))
        let changed = try await world.run(manifest.replacingOccurrences(of: "dest: data/src.bin", with: "dest: data/src.bin\n    refresh: always"))
        let afterChange = world.origin.uploads("/api/files").count
        let always = try await world.run(manifest.replacingOccurrences(of: "timeout: 60s", with: "timeout: 60s, refresh: always"))
        let afterAlways = world.origin.uploads("/api/files").count
        await world.close()

        #expect(first.jobs[1].status == .uploaded)
        #expect(second.jobs[1].status == .upToDate)
        #expect(second.jobs[1].evidence == UploadRules.postedBefore)
        #expect(afterSecond == 1)
        #expect(changed.jobs[0].status == .downloaded && changed.jobs[1].status == .uploaded)
        #expect(afterChange == 2)
        #expect(always.jobs[1].status == .uploaded && afterAlways == 3)
    }

    // MARK: - Faults

    @Test func aPutCutOffMidBodyIsSentAgain() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin", OriginReceiver(faults: [.dropAfter(bytes: 1 << 20)]))
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        let uploads = world.origin.uploads("/store/src.bin")
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .uploaded, "\(String(describing: push.error))")
        #expect(push.attempts == 2)
        #expect(uploads.map(\.complete) == [false, true])
        #expect(uploads.last?.sha256 == Harness.sha256(Self.content))
    }

    @Test(arguments: [false, true])
    func aPostCutOffMidBodyIsNotSentAgainUnlessTheJobSaysSo(retryPost: Bool) async throws {
        let world = try await Self.world()
        world.origin.receive("/api/files", OriginReceiver(faults: [.dropAfter(bytes: 1 << 20)]))
        let report = try await world.run(Self.fetchAndPush("/api/files", extra: "method: POST\(retryPost ? "\nretry_post: true" : "")"))
        let uploads = world.origin.uploads("/api/files")
        await world.close()

        let push = report.jobs[1]
        if retryPost {
            #expect(push.status == .uploaded, "\(String(describing: push.error))")
            #expect(uploads.map(\.complete) == [false, true])
        } else {
            #expect(push.status == .failed)
            #expect(push.error?.message.contains("retry_post") == true, "\(push.error?.message ?? "")")
            #expect(uploads.count == 1)
        }
    }

    /// A POST to a port nobody listens on never reached a server: it is retried.
    @Test func aPostThatNeverConnectedIsRetried() async throws {
        let world = try await Self.world()
        let closed = try await TestOrigin.start()
        let url = closed.url("/api")
        try await closed.shutdown()
        try Data("x".utf8).write(to: URL(fileURLWithPath: world.path("a.txt")))
        let report = try await world.run("""
            version: 1
            defaults: {retries: 2, backoff: 20ms, backoff_max: 50ms}
            jobs:
              - {id: post, upload: a.txt, url: "\(url)", method: POST}
            """)
        await world.close()

        #expect(report.jobs[0].status == .failed)
        #expect(report.jobs[0].error?.code == .connection)
        #expect(report.jobs[0].error?.attempts?.count == 3)
    }

    @Test func a503WithRetryAfterIsWaitedFor() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin", OriginReceiver(faults: [.status(503, retryAfter: "1")]))
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .uploaded, "\(String(describing: push.error))")
        #expect(push.attemptLog?.first?.httpStatus == 503)
        #expect(push.attemptLog?.last?.waitedSeconds == 1)
    }

    @Test func a413FailsAtOnceAndKeepsTheLocalFile() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin", OriginReceiver(faults: [.statusAtHead(413)]))
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        let local = try? world.sha256(ofFile: "data/src.bin")
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .failed)
        #expect(push.error?.code == .httpStatus)
        #expect(push.error?.message.contains("413") == true)
        #expect(push.attempts == 1)
        #expect(local == Harness.sha256(Self.content))
        #expect(report.status == .failed)
    }

    /// A redirect to another origin is followed with the body sent again, without the job's
    /// `Authorization` (which went to the first origin only).
    @Test func aRedirectToAnotherOriginDropsCredentials() async throws {
        let world = try await Self.world()
        let other = try await TestOrigin.start(host: "127.0.0.1")
        other.receive("/moved/src.bin")
        world.origin.receive("/store/src.bin", OriginReceiver(faults: [.redirect(to: other.url("/moved/src.bin"), status: 307)]))
        let report = try await world.run(Self.fetchAndPush("/store/src.bin", extra: "headers: {Authorization: \"Bearer ${TOKEN}\"}"),
                                         environment: ["TOKEN": "t0ken"])
        let first = world.origin.uploads("/store/src.bin")
        let moved = other.uploads("/moved/src.bin")
        try? await other.shutdown()
        await world.close()

        let push = report.jobs[1]
        #expect(push.status == .uploaded, "\(String(describing: push.error))")
        #expect(push.url == other.url("/moved/src.bin"))
        #expect(push.redirects == [other.url("/moved/src.bin")])
        #expect(first.first?.header("Authorization") == "Bearer t0ken")
        try #require(moved.count == 1)
        #expect(moved[0].header("Authorization") == nil)
        #expect(moved[0].sha256 == Harness.sha256(Self.content))
    }

    @Test func aStoreThatEchoesAnotherDigestFailsTheJob() async throws {
        let world = try await Self.world()
        var receiver = OriginReceiver()
        receiver.wrongReprDigest = "sha-256=:\(Data(repeating: 7, count: 32).base64EncodedString()):"
        world.origin.receive("/store/src.bin", receiver)
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        await world.close()

        #expect(report.jobs[1].status == .failed)
        #expect(report.jobs[1].error?.code == .checksumMismatch)
    }

    /// A second process rewrites the file while it is being sent: the job fails `source_changed`
    /// (the target may hold the changed bytes under the old digest; a server that checks
    /// Content-Digest refuses them), and nothing local is touched. The target holds its answer
    /// until the file is rewritten, so the rewrite lands while the upload is in flight however
    /// late a loaded machine hands the test the progress event.
    @Test func aFileRewrittenDuringTheUploadFailsSourceChanged() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/src.bin")
        _ = try await world.run(Self.fetchAndPush("/store/src.bin"))
        var holding = OriginReceiver()
        holding.held = true
        world.origin.receive("/store/copy.bin", holding)
        let handle = try world.start("""
            version: 1
            rate_limit: 2MB/s
            jobs:
              - {id: push, upload: data/src.bin, url: "{origin}/store/copy.bin", retries: 0, timeout: 10m}
            """)
        var rewritten = false
        for await event in handle.events {
            guard case .progress(let progress) = event, !rewritten,
                  let push = progress.active.first(where: { $0.id == "push" }), push.bytes > 512 << 10 else { continue }
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: world.path("data/src.bin")))
            try file.write(contentsOf: Data(repeating: 0, count: 4096))
            try file.close()
            rewritten = true
            world.origin.updateReceiver("/store/copy.bin") { $0.held = false }
        }
        let report = await handle.report
        await world.close()

        #expect(rewritten, "the upload never got past 512 KiB")
        #expect(report.jobs[0].status == .failed)
        #expect(report.jobs[0].error?.code == .sourceChanged, "\(String(describing: report.jobs[0].error))")
    }

    /// An empty file is an upload of zero bytes with `Content-Length: 0`, not a chunked body.
    @Test func anEmptyFileIsSentWithALengthOfZero() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/empty")
        try Data().write(to: URL(fileURLWithPath: world.path("empty.bin")))
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: empty, upload: empty.bin, url: "{origin}/store/empty"}
            """)
        let uploads = world.origin.uploads("/store/empty")
        await world.close()

        #expect(report.jobs[0].status == .uploaded, "\(String(describing: report.jobs[0].error))")
        try #require(uploads.count == 1)
        #expect(uploads[0].bytes == 0 && uploads[0].header("Content-Length") == "0")
        #expect(uploads[0].header("Transfer-Encoding") == nil)
    }

    /// Nothing to send: a missing file, a symlink planted where the file should be.
    @Test func aMissingOrSymlinkedSourceFailsWithoutARequest() async throws {
        let world = try await Self.world()
        world.origin.receive("/store/a")
        try FileManager.default.createSymbolicLink(atPath: world.path("link.bin"), withDestinationPath: "/etc/hostname")
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: missing, upload: none.bin, url: "{origin}/store/a"}
              - {id: link, upload: link.bin, url: "{origin}/store/b"}
            """)
        let requests = world.origin.allRequests.count
        await world.close()

        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.message.contains("no file") == true)
        #expect(report.jobs[1].status == .failed && report.jobs[1].error?.code == .unsafePath)
        #expect(requests == 0)
    }

    /// An upload waits for the download of its file; when that fails, the upload is skipped.
    @Test func anUploadOfAFailedDownloadIsSkipped() async throws {
        let world = try await Harness()
        world.origin.receive("/store/src.bin")
        let report = try await world.run(Self.fetchAndPush("/store/src.bin"))
        let uploads = world.origin.uploads("/store/src.bin")
        await world.close()

        #expect(report.jobs[0].status == .failed)
        #expect(report.jobs[1].status == .skipped && report.jobs[1].kind == "upload")
        #expect(uploads.isEmpty)
    }
}

/// multipart/form-data parsed by python-multipart (Tests/Support/form_parse.py), an
/// implementation independent of the one that wrote the form.
enum FormParser {
    struct Part: Decodable {
        var name: String
        var fileName: String?
        var contentType: String?
        var text: String?
        var size: Int
        var sha256: String
    }

    static func parse(_ body: Data, contentType: String) async throws -> [Part] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("form-\(UUID().uuidString)")
        try body.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        var script = URL(fileURLWithPath: #filePath)
        while script.lastPathComponent != "Tests" { script.deleteLastPathComponent() }
        let parsed = try await ToolRun.run(["python3", script.appendingPathComponent("Support/form_parse.py").path, input.path, contentType])
        return try JSONDecoder().decode([Part].self, from: parsed.stdout)
    }
}
