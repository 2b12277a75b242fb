@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The redirect, retry and credential rules every command shares, without sockets.
@Suite struct RedirectPolicyTests {
    let from = URL(string: "https://user:pw@a.example/dir/file.bin")!

    func decide(_ location: String?, from: URL? = nil, policy: RedirectPolicy = RedirectPolicy(), followed: Int = 0)
        -> RedirectPolicy.Decision {
        policy.decide(status: 302, location: location, from: from ?? self.from, followed: followed)
    }

    @Test func relativeAndAbsoluteHTTPTargetsAreFollowedWithoutUserinfoOrFragment() {
        #expect(decide("other.bin#part") == .follow(URL(string: "https://a.example/dir/other.bin")!))
        #expect(decide("/top?x=1") == .follow(URL(string: "https://a.example/top?x=1")!))
        #expect(decide("https://evil:creds@b.example:8443/f") == .follow(URL(string: "https://b.example:8443/f")!))
        #expect(decide("//c.example/f") == .follow(URL(string: "https://c.example/f")!))
    }

    @Test(arguments: ["ftp://mirror.example/f.bin", "file:///etc/passwd", "http+unix://%2Frun%2Fd.sock/f",
                      "data:text/plain,hello", "gopher://g.example/1"])
    func onlyHTTPAndHTTPSTargetsAreFollowed(location: String) {
        guard case .refuse(let failure) = decide(location) else {
            Issue.record("followed \(location)")
            return
        }
        #expect(failure.code == .redirectRefused)
        #expect(failure.message.contains("only http and https"))
    }

    @Test func httpsToHTTPIsRefusedUnlessAllowed() {
        guard case .refuse(let failure) = decide("http://a.example/dir/file.bin") else {
            Issue.record("followed a downgrade")
            return
        }
        #expect(failure.code == .redirectRefused)
        #expect(failure.message.contains("allow_insecure_redirect"))
        #expect(decide("http://a.example/f", policy: RedirectPolicy(allowInsecure: true)) == .follow(URL(string: "http://a.example/f")!))
        #expect(decide("https://a.example/f", from: URL(string: "http://a.example/")!) == .follow(URL(string: "https://a.example/f")!))
    }

    @Test func missingLocationAndTooManyHopsFail() {
        guard case .refuse(let missing) = decide(nil), case .refuse(let tooMany) = decide("/f", followed: 10) else {
            Issue.record("followed")
            return
        }
        #expect(missing.code == .httpStatus)
        #expect(tooMany.code == .tooManyRedirects)
        #expect(decide("/f", followed: 9) == .follow(URL(string: "https://a.example/f")!))
    }

    /// S3's 301 to a bucket of another region has no Location but names the region: at AWS it
    /// is followed to that region's endpoint (virtual-hosted and path style), and the request
    /// there is signed for that region; elsewhere (a custom endpoint) the failure says which
    /// region to set; with a Location the header changes nothing.
    @Test func anS3RegionRedirect() throws {
        let hosted = URL(string: "https://data.s3.us-east-1.amazonaws.com/k.bin")!
        #expect(RedirectPolicy().decide(status: 301, location: nil, from: hosted, followed: 0, bucketRegion: "eu-west-1")
            == .follow(URL(string: "https://data.s3.eu-west-1.amazonaws.com/k.bin")!))
        let path = URL(string: "https://s3.amazonaws.com/data/k.bin")!
        #expect(RedirectPolicy().decide(status: 301, location: nil, from: path, followed: 0, bucketRegion: "ap-south-1")
            == .follow(URL(string: "https://s3.ap-south-1.amazonaws.com/data/k.bin")!))
        let custom = URL(string: "http://127.0.0.1:9000/data/k.bin")!
        guard case .refuse(let failure) = RedirectPolicy().decide(status: 301, location: nil, from: custom, followed: 0,
                                                                  bucketRegion: "eu-west-1") else {
            Issue.record("followed a redirect without Location away from AWS")
            return
        }
        #expect(failure.message.contains("the bucket is in the region eu-west-1") && failure.message.contains("s3: {region: eu-west-1}"))
        #expect(RedirectPolicy().decide(status: 307, location: "https://other.example/k.bin", from: hosted, followed: 0,
                                        bucketRegion: "eu-west-1") == .follow(URL(string: "https://other.example/k.bin")!))

        // Signed for the new region at the same bucket's endpoint; not at all anywhere else.
        let mirror = try #require(MirrorURL(TemplatedString(literal: "s3://data/k.bin"), s3: S3Settings(region: "us-east-1"),
                                         environment: ["HOME": "/nonexistent", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"]))
        func region(_ request: JobNetwork.StoreRequest) -> String? {
            if case .signed(let signer) = request { return signer.region }
            return nil
        }
        #expect(region(JobNetwork.storeRequest(to: mirror.url, of: mirror)) == "us-east-1")
        #expect(region(JobNetwork.storeRequest(to: URL(string: "https://data.s3.eu-west-1.amazonaws.com/k.bin")!, of: mirror)) == "eu-west-1")
        #expect(JobNetwork.storeRequest(to: URL(string: "https://other.s3.eu-west-1.amazonaws.com/k.bin")!, of: mirror) == .elsewhere)
        #expect(JobNetwork.storeRequest(to: URL(string: "http://data.s3.eu-west-1.amazonaws.com/k.bin")!, of: mirror) == .elsewhere)
        #expect(JobNetwork.storeRequest(to: URL(string: "https://cdn.example/k.bin")!, of: mirror) == .elsewhere)
        let open = try #require(MirrorURL(TemplatedString(literal: "s3://data/k.bin"), s3: S3Settings(region: "us-east-1", anonymous: true),
                                          environment: ["HOME": "/nonexistent"]))
        #expect(JobNetwork.storeRequest(to: open.url, of: open) == .anonymous)
    }

    @Test func messagesShowTargetsRedacted() throws {
        let token = try VariableExpander(environment: ["TOKEN": "t0ps3cret/x"]).expand("https://a.example/f?token=${TOKEN}").get()
        let policy = RedirectPolicy(redactor: Redactor([token]))
        guard case .refuse(let failure) = decide("ftp://b.example/f?token=t0ps3cret%2Fx", policy: policy) else {
            Issue.record("followed")
            return
        }
        #expect(!failure.message.contains("t0ps3cret"))
        #expect(failure.message.contains("token=${TOKEN}"))
    }
}

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(retries: 2, backoff: 1, backoffMax: 8, retryAfterMax: 300)
    let failure = BatchFetchError(.httpStatus, "HTTP 503 from m")

    @Test func backoffDoublesUntilTheRetriesAreUsedUp() {
        #expect(policy.decide(after: failure, failures: 1, retryAfter: nil, remaining: nil) == .wait(RetryDelay(seconds: 1, jitter: true)))
        #expect(policy.decide(after: failure, failures: 2, retryAfter: nil, remaining: nil) == .wait(RetryDelay(seconds: 2, jitter: true)))
        #expect(policy.decide(after: failure, failures: 3, retryAfter: nil, remaining: nil) == .giveUp(failure))
    }

    @Test func aBackoffThatCouldEndPastTheDeadlineIsNotWaited() {
        #expect(policy.decide(after: failure, failures: 2, retryAfter: nil, remaining: 2) == .wait(RetryDelay(seconds: 2, jitter: true)))
        guard case .giveUp(let late) = policy.decide(after: failure, failures: 2, retryAfter: nil, remaining: 1.5) else {
            Issue.record("a backoff of up to 2 s was allowed with 1.5 s left")
            return
        }
        #expect(late.code == .deadlineExceeded && late.message.contains("HTTP 503 from m"))
    }

    @Test func retryAfterIsWaitedExactlyUpToTheCapAndTheDeadline() {
        #expect(policy.decide(after: failure, failures: 1, retryAfter: 120, remaining: nil) == .wait(RetryDelay(seconds: 120, jitter: false)))
        guard case .giveUp(let capped) = policy.decide(after: failure, failures: 1, retryAfter: 86_400, remaining: nil) else {
            Issue.record("waited a day")
            return
        }
        #expect(capped.code == .httpStatus)
        #expect(capped.message.contains("86400s") && capped.message.contains("retry_after_max (300s)"))
        guard case .giveUp(let late) = policy.decide(after: failure, failures: 1, retryAfter: 120, remaining: 30) else {
            Issue.record("waited past the deadline")
            return
        }
        #expect(late.code == .deadlineExceeded)
        #expect(policy.decide(after: failure, failures: 1, retryAfter: 20, remaining: 30) == .wait(RetryDelay(seconds: 20, jitter: false)))
    }
}

@Suite struct CredentialPolicyTests {
    static let expander = VariableExpander(environment: ["TOKEN": "tok-123456", "KEY": "key-abcdef"])

    static func policy(crossOrigin: [String] = [], netrc: Netrc? = nil) throws -> CredentialPolicy {
        try CredentialPolicy(headers: [
            (name: "Authorization", value: expander.expand("Bearer ${TOKEN}").get()),
            (name: "Cookie", value: TemplatedString(literal: "session=1")),
            (name: "X-Api-Key", value: expander.expand("${KEY}").get()),
            (name: "Accept", value: TemplatedString(literal: "*/*")),
        ], crossOrigin: crossOrigin, netrc: netrc)
    }

    static func names(_ headers: [(name: String, value: String)]) -> [String] {
        headers.map(\.name)
    }

    let mirror = URL(string: "https://a.example/f")!

    @Test func sameOriginGetsEverything() throws {
        let (url, headers) = try Self.policy().request(to: URL(string: "https://a.example:443/other")!, forMirror: mirror)
        #expect(url.absoluteString == "https://a.example:443/other")
        #expect(Self.names(headers) == ["Authorization", "Cookie", "X-Api-Key", "Accept"])
    }

    @Test(arguments: ["https://b.example/f", "https://a.example:8443/f", "http://a.example/f"])
    func anotherOriginGetsNoCredentials(target: String) throws {
        let (_, headers) = try Self.policy().request(to: URL(string: target)!, forMirror: mirror)
        #expect(Self.names(headers) == ["Accept"])
    }

    @Test func crossOriginHeadersAreAnOptInButNeverOverHTTPAfterHTTPS() throws {
        let policy = try Self.policy(crossOrigin: ["authorization"])
        #expect(Self.names(policy.request(to: URL(string: "https://cdn.example/f")!, forMirror: mirror).headers) == ["Authorization", "Accept"])
        #expect(Self.names(policy.request(to: URL(string: "http://cdn.example/f")!, forMirror: mirror).headers) == ["Accept"])
    }

    @Test func userinfoBecomesBasicForItsOriginOnly() throws {
        let policy = CredentialPolicy(headers: [], crossOrigin: [], netrc: nil)
        let mirror = URL(string: "https://us%40er:p%3Ass@a.example/f")!
        let (url, headers) = policy.request(to: mirror, forMirror: mirror)
        #expect(url.absoluteString == "https://a.example/f")
        #expect(headers.first { $0.name == "Authorization" }?.value == "Basic " + Data("us@er:p:ss".utf8).base64EncodedString())
        let (_, elsewhere) = policy.request(to: URL(string: "https://b.example/f")!, forMirror: mirror)
        #expect(elsewhere.isEmpty)
    }

    @Test func netrcCredentialsGoToTheirHostOnly() throws {
        let netrc = Netrc(text: """
            machine a.example login alice password "pass word"
            macdef init
            cd /pub

            default login anonymous password guest
            """)
        #expect(netrc.credentials(forHost: "A.EXAMPLE") == Netrc.Entry(login: "alice", password: "pass word"))
        #expect(netrc.credentials(forHost: "other.example") == Netrc.Entry(login: "anonymous", password: "guest"))
        let policy = CredentialPolicy(headers: [], crossOrigin: [], netrc: netrc)
        let (_, headers) = policy.request(to: mirror, forMirror: mirror)
        #expect(headers.first?.value == "Basic " + Data("alice:pass word".utf8).base64EncodedString())
        #expect(policy.request(to: URL(string: "http://a.example/f")!, forMirror: mirror).headers.isEmpty)
    }
}
