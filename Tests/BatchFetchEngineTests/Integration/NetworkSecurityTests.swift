@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// What batchfetch sends where, against real servers on two loopback hosts (127.0.0.1 and
/// 127.0.0.2) and two ports: credentials stay with their origin, only http(s) redirects are
/// followed, secrets never come back out, Retry-After is bounded — for run and check alike.
@Suite(.serialized) struct NetworkSecurityTests {
    static let environment = ["TOKEN": "tok-5ecret-77", "PW": "pw-hunter-42", "KEY": "key-abc-999"]
    static let secrets = ["tok-5ecret-77", "pw-hunter-42", "key-abc-999"]

    /// A second origin: another host (127.0.0.2) or another port of 127.0.0.1.
    static func other(crossPort: Bool) async throws -> TestOrigin {
        try await TestOrigin.start(host: crossPort ? "127.0.0.1" : "127.0.0.2")
    }

    static func credentialHeaders(_ request: TestOrigin.RecordedRequest) -> [String] {
        ["Authorization", "Cookie", "X-Api-Key"].filter { request.header($0) != nil }
    }

    /// A bucket's signature goes only to its endpoint: TestOrigin stands for the store (an
    /// `s3:` endpoint) and redirects the object to another host, which is asked unsigned — no
    /// `Authorization`, no `x-amz-security-token` — and the session token and secret appear in
    /// no output.
    @Test func aStoreSignsOnlyItsOwnEndpoint() async throws {
        let world = try await Harness()
        let other = try await Self.other(crossPort: false)
        defer { Task { try? await other.shutdown() } }
        let content = OriginContent.generated(size: 50_000, seed: 12)
        other.serve("/elsewhere.bin", OriginFile(content: content))
        var moved = OriginFile.text("")
        moved.redirectTo = other.url("/elsewhere.bin")
        world.origin.serve("/bucket/k.bin", moved)
        var options = RunOptions()
        options.environment = ["HOME": "/nonexistent", "AWS_ACCESS_KEY_ID": "AKIATEST", "AWS_SECRET_ACCESS_KEY": "s3cret-key-9",
                               "AWS_SESSION_TOKEN": "sess-token-7"]
        let report = try await world.run("""
            version: 1
            output_dir: out
            jobs:
              - {id: k, url: "s3://bucket/k.bin", dest: k.bin, retries: 0, s3: {endpoint: "\(world.origin.url(""))"}}
            """, options: options)
        let asked = world.origin.requests("/bucket/k.bin")
        let redirected = other.requests("/elsewhere.bin")
        let reportText = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        await world.close()
        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(!asked.isEmpty && asked.allSatisfy { $0.header("Authorization")?.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIATEST/") == true })
        #expect(asked.allSatisfy { $0.header("x-amz-security-token") == "sess-token-7" })
        #expect(!redirected.isEmpty && redirected.allSatisfy { $0.header("Authorization") == nil && $0.header("x-amz-security-token") == nil })
        #expect(!reportText.contains("sess-token-7") && !reportText.contains("s3cret-key-9"))
    }

    @Test(arguments: [false, true])
    func credentialsStayWithTheirOrigin(crossPort: Bool) async throws {
        let world = try await Harness()
        let other = try await Self.other(crossPort: crossPort)
        defer { Task { try? await other.shutdown() } }
        let content = OriginContent.generated(size: 100_000, seed: 9)
        other.serve("/file", OriginFile(content: content))
        var hop = OriginFile.text("")
        hop.redirectTo = "/r2"
        world.origin.serve("/r", hop)
        var away = OriginFile.text("")
        away.redirectTo = other.url("/file")
        world.origin.serve("/r2", away)
        let base = "http://u:${PW}@127.0.0.1:\(world.origin.port)"
        let manifest = """
            version: 1
            defaults: {retries: 0, timeout: 60s, headers: {Authorization: "Bearer ${TOKEN}", Cookie: "s=1", X-Api-Key: "${KEY}"}}
            jobs:
              - {id: headers, url: "\(base)/r", dest: a.bin}
              - {id: opt-in, url: "\(base)/r?job=b", dest: b.bin, cross_origin_headers: [Authorization]}
            """
        let report = try await world.run(manifest, environment: Self.environment)
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded])
        #expect(try world.sha256(ofFile: "a.bin") == Harness.sha256(content))
        let here = world.origin.allRequests
        #expect(here.count == 4)
        #expect(here.allSatisfy { Self.credentialHeaders($0) == ["Authorization", "Cookie", "X-Api-Key"] })
        #expect(here.allSatisfy { $0.header("Authorization") == "Bearer tok-5ecret-77" })
        let there = other.requests("/file")
        #expect(there.count == 2)
        #expect(there.map(Self.credentialHeaders).sorted { $0.count < $1.count } == [[], ["Authorization"]])

        // check and check --deep follow the same policy.
        other.resetCounters()
        for deep in [false, true] {
            let checked = try await world.check(manifest, deep: deep, environment: Self.environment)
            #expect(checked.jobs.map(\.status) == [.ok, .ok])
        }
        #expect(other.requests("/file").map(Self.credentialHeaders).filter { !$0.isEmpty }.allSatisfy { $0 == ["Authorization"] })
        #expect(other.requests("/file").filter { Self.credentialHeaders($0).isEmpty }.count == 2)
        await world.close()
    }

    @Test func userinfoIsSentAsBasicToItsOriginOnlyOnBothTransports() async throws {
        let world = try await Harness()
        let other = try await Self.other(crossPort: false)
        defer { Task { try? await other.shutdown() } }
        other.serve("/file", .text("payload"))
        world.origin.serve("/own", .text("own"))
        var away = OriginFile.text("")
        away.redirectTo = other.url("/file")
        world.origin.serve("/away", away)
        let base = "http://us%40er:${PW}@127.0.0.1:\(world.origin.port)"
        let report = try await world.run("""
            version: 1
            defaults: {retries: 0, timeout: 60s}
            jobs:
              - {id: own, url: "\(base)/own"}
              - {id: away, url: "\(base)/away"}
            """, environment: Self.environment)
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded])
        let basic = "Basic " + Data("us@er:pw-hunter-42".utf8).base64EncodedString()
        #expect(world.origin.allRequests.map { $0.header("Authorization") } == [basic, basic])
        #expect(other.requests("/file").map { $0.header("Authorization") } == [nil])
        #expect(report.jobs[1].redirects == [other.url("/file")])
    }

    @Test func pinFollowsTheSamePolicy() async throws {
        let world = try await Harness()
        let other = try await Self.other(crossPort: true)
        defer { Task { try? await other.shutdown() } }
        other.serve("/file", .text("pinned"))
        var away = OriginFile.text("")
        away.redirectTo = other.url("/file")
        world.origin.serve("/r", away)
        let manifest = try world.manifest("""
            version: 1
            jobs:
              - {id: file, url: "{origin}/r", dest: f.txt, headers: {Authorization: "Bearer ${TOKEN}"}, retries: 0}
            """, environment: Self.environment)
        let (lock, report) = await Pinner(manifest: manifest, options: world.options(for: manifest)).run()
        #expect(report.status == .succeeded)
        #expect(lock?.jobs["file"]?.mirrors.first?.size == 6)
        // The download and the HEAD that pinned the mirror: neither carried the token away.
        #expect(other.requests("/file").map(\.method) == ["GET", "HEAD"])
        #expect(other.requests("/file").allSatisfy { $0.header("Authorization") == nil })
        #expect(world.origin.requests("/r").allSatisfy { $0.header("Authorization") == "Bearer tok-5ecret-77" })
        await world.close()
    }

    @Test func netrcIsAnOptInForTheMirrorsHost() async throws {
        let world = try await Harness()
        let netrc = world.directory.appendingPathComponent("netrc")
        try Data("machine 127.0.0.1 login alice password \"n3trc pass\"\n".utf8).write(to: netrc)
        world.origin.serve("/a", .text("a"))
        world.origin.serve("/b", .text("b"))
        var options = RunOptions()
        options.environment = ["NETRC": netrc.path]
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: a, url: "{origin}/a", netrc: true}
              - {id: b, url: "{origin}/b"}
            """, options: options)
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded])
        #expect(world.origin.requests("/a").first?.header("Authorization") == "Basic " + Data("alice:n3trc pass".utf8).base64EncodedString())
        #expect(world.origin.requests("/b").first?.header("Authorization") == nil)
        await world.close()
    }

    @Test(arguments: ["ftp://127.0.0.1:1/f.bin", "file:///etc/passwd", "http+unix://%2Ftmp%2Fbf.sock/f", "data:,hello"])
    func nonHTTPRedirectTargetsAreRefusedAtOnce(target: String) async throws {
        let world = try await Harness()
        var redirect = OriginFile.text("")
        redirect.redirectTo = target
        world.origin.serve("/r", redirect)
        let manifest = world.single("/r", extra: "retries: 3")
        let report = try await world.run(manifest)
        let error = try #require(report.jobs[0].error)
        #expect(error.code == .redirectRefused)
        #expect(error.message.contains(target.prefix(8)))
        #expect(world.origin.requests("/r").count == 1)
        #expect(!world.exists("out.bin"))

        let checked = try await world.check(manifest)
        #expect(checked.jobs[0].status == .unreachable)
        #expect(checked.jobs[0].mirrors?.first?.message?.contains("redirect_refused") == true)
        #expect(world.origin.requests("/r").count == 2)
        await world.close()
    }

    @Test func secretsEchoedByTheServerNeverReachAnyOutput() async throws {
        let world = try await Harness()
        var echo = OriginFile.text("")
        echo.redirectTo = "/gone{uri}"
        world.origin.serve("/echo", echo)
        var away = OriginFile.text("")
        away.redirectTo = "ftp://127.0.0.2/{uri}"
        world.origin.serve("/ftp", away)
        let base = "http://u:${PW}@127.0.0.1:\(world.origin.port)"
        let manifest = """
            version: 1
            defaults: {retries: 1, backoff: 10ms, timeout: 60s}
            jobs:
              - {id: missing, url: "\(base)/echo?token=${TOKEN}&k=${KEY}", dest: a.bin}
              - {id: refused, url: "\(base)/ftp?token=${TOKEN}", dest: b.bin}
            """
        let report = try await world.run(manifest, environment: Self.environment)
        #expect(report.jobs.map(\.status) == [.failed, .failed])
        // The secrets did travel (the server echoed them), and came back redacted.
        #expect(world.origin.requests("/gone/echo").first?.uri.contains("tok-5ecret-77") == true)
        #expect(report.jobs[0].redirects == ["http://127.0.0.1:\(world.origin.port)/gone/echo?token=${TOKEN}&k=${KEY}"])
        let outputs = [
            String(decoding: try StableJSON.encode(report), as: UTF8.self), report.junitXML(),
            String(decoding: try StableJSON.encode(try await world.check(manifest, environment: Self.environment)), as: UTF8.self),
        ]
        for output in outputs {
            for secret in Self.secrets { #expect(!output.contains(secret), "\(secret) in \(output)") }
            #expect(output.contains("${TOKEN}"))
        }
        await world.close()
    }

    @Test func aLongRetryAfterFailsOverInsteadOfWaiting() async throws {
        let world = try await Harness()
        var busy = OriginFile.text("")
        busy.faults = [.status(503, retryAfter: "86400")]
        world.origin.serve("/busy", busy)
        world.origin.serve("/file", .text("from the second mirror"))
        let report = try await world.run("""
            version: 1
            jobs:
              - id: file
                urls: ["{origin}/busy", "{origin}/file"]
                dest: out.bin
            """)
        #expect(report.jobs[0].status == .downloaded)
        #expect(report.jobs[0].mirrorIndex == 1)
        // Not waited: no attempt records a wait (what a wall-clock bound used to stand for).
        #expect(report.jobs[0].attemptLog?.allSatisfy { ($0.waitedSeconds ?? 0) == 0 } == true)
        #expect(report.jobs[0].attemptLog?.first?.message?.contains("retry_after_max (300s)") == true)
        #expect(world.origin.requests("/busy").count == 1)

        // Past the deadline, whatever the cap: the mirror gives up at once.
        world.origin.update("/busy") { $0.faults = [.status(503, retryAfter: "600")] }
        let late = try await world.run(world.single("/busy", dest: "late.bin", extra: "retry_after_max: 1h\ndeadline: 30s"))
        #expect(late.jobs[0].error?.code == .deadlineExceeded)
        #expect(late.jobs[0].error?.message.contains("past the job's deadline") == true)
        #expect(late.jobs[0].error?.attempts?.allSatisfy { ($0.waitedSeconds ?? 0) == 0 } == true)
        await world.close()
    }

    @Test func aRefusedConnectionFailsAtOnceNotAfterTheIdleTimeout() async throws {
        let world = try await Harness()
        let closed = try await TestOrigin.start()
        let url = closed.url("/file")
        try await closed.shutdown()
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: file, url: "\(url)", dest: out.bin, retries: 1, backoff: 10ms, timeout: 20s}
            """)
        #expect(report.jobs[0].error?.code == .connection)
        // `connection`, not `timeout`: the refusal ended each attempt, not the 20 s idle timeout.
        #expect(report.jobs[0].error?.attempts?.count == 2)
        #expect(report.jobs[0].error?.attempts?.allSatisfy { $0.code == .connection } == true)
        await world.close()
    }

    @Test func a401WithAChallengeFailsAtOnce() async throws {
        let world = try await Harness()
        var denied = OriginFile.text("")
        denied.fixedStatus = 401
        denied.extraHeaders = [("WWW-Authenticate", "Basic realm=\"files\"")]
        world.origin.serve("/private", denied)
        let report = try await world.run(world.single("/private", extra: "timeout: 8s"))
        #expect(report.jobs[0].error?.code == .httpStatus)
        // The 401 itself ended the job (held until the idle timeout it would be `timeout`).
        #expect(report.jobs[0].httpStatus == 401)
        await world.close()
    }
}
