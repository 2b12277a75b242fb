@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// The SigV4 signer against AWS's published signatures (the `aws-sig-v4-test-suite` cases and
/// the S3 developer guide's GET example) and against botocore signing the same S3 requests —
/// keys with `+`, spaces and non-ASCII characters, reserved characters, a query, a session
/// token — so a wrong byte anywhere in the chain fails here, not at a bucket.
@Suite struct SigV4SignerTests {
    static let suiteCredentials = SigV4Signer.Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    /// 2015-08-30T12:36:00Z, the test suite's instant.
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)

    static func signature(_ headers: [(name: String, value: String)]) -> String? {
        headers.first { $0.name == "Authorization" }?.value
    }

    @Test(arguments: [
        ("GET", "https://example.amazonaws.com/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),  // get-vanilla
        ("GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1",
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),  // get-vanilla-query-order-key-case
        ("POST", "https://example.amazonaws.com/", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),  // post-vanilla
        ("GET", "https://example.amazonaws.com/%E1%88%B4", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),  // get-utf8
    ])
    func theTestSuiteVectors(_ method: String, _ url: String, _ expected: String) throws {
        let signer = SigV4Signer(credentials: Self.suiteCredentials, region: "us-east-1", service: "service")
        let headers = signer.headers(method: method, url: try #require(URL(string: url)), payloadHash: SigV4Signer.emptyPayload,
                                     date: Self.suiteDate, contentHashHeader: false)
        #expect(Self.signature(headers) == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=host;x-amz-date, Signature=\(expected)")
        #expect(headers.first { $0.name == "x-amz-date" }?.value == "20150830T123600Z")
    }

    @Test func theSigningKeyOfTheTestSuite() {
        let signer = SigV4Signer(credentials: Self.suiteCredentials, region: "us-east-1", service: "service")
        let key = signer.signingKey(day: "20150830").withUnsafeBytes { Data($0) }
        #expect(key.map { String(format: "%02x", $0) }.joined() == "938127b5336810ddb6a5d6af445fcac9e371f9ed418ed386b022aed82901be75")
    }

    /// The S3 developer guide's example: the first ten bytes of `test.txt`, `Range` signed.
    @Test func theS3GuideGetObjectExample() throws {
        let signer = SigV4Signer(credentials: .init(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                 region: "us-east-1")
        let headers = signer.headers(method: "GET", url: try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")),
                                     headers: [("Range", "bytes=0-9")], payloadHash: SigV4Signer.emptyPayload,
                                     date: Date(timeIntervalSince1970: 1_369_353_600))
        #expect(Self.signature(headers) == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    /// The same requests signed by botocore (`Tests/Support/sigv4_reference.py`) and by us.
    @Test(.enabled { await Self.botocoreAvailable() })
    func matchesBotocore() async throws {
        struct Case: Encodable {
            var method = "GET", endpoint = "http://127.0.0.1:9000/bucket", key: String, query: [[String]] = []
            var access_key = "AKIAEXAMPLE", secret = "se/cr+et", token: String? = nil, region = "eu-west-1"
            var time = "20261126T101500Z"
        }
        let cases = [
            Case(key: "plain.bin"), Case(key: "a+b c/é 中.txt"), Case(key: "-._~!$&'()*+,;=:@%/x"),
            Case(method: "HEAD", endpoint: "https://bucket.s3.eu-west-1.amazonaws.com", key: "dir/f.tar.gz", token: "FwoGZXIvYXdz+/token=="),
            Case(key: "", query: [["list-type", "2"], ["prefix", "a b/é+"], ["continuation-token", "x/y+z="], ["delimiter", "/"]]),
            Case(method: "PUT", key: "up/load.bin", query: [["uploadId", "2~x"], ["partNumber", "10"]], region: "us-east-1"),
        ]
        let json = String(decoding: try JSONEncoder().encode(cases), as: UTF8.self)
        let expected = try await Self.python(["Tests/Support/sigv4_reference.py", json]).split(separator: "\n").map(String.init)
        try #require(expected.count == cases.count)
        for (index, item) in cases.enumerated() {
            var url = item.endpoint + "/" + SigV4Signer.encode(item.key, keepSlash: true)
            if !item.query.isEmpty {
                url += "?" + item.query.map { SigV4Signer.encode($0[0], keepSlash: false) + "=" + SigV4Signer.encode($0[1], keepSlash: false) }
                    .joined(separator: "&")
            }
            let signer = SigV4Signer(credentials: .init(accessKeyID: item.access_key, secretAccessKey: item.secret, sessionToken: item.token),
                                     region: item.region)
            let headers = signer.headers(method: item.method, url: try #require(URL(string: url)), payloadHash: SigV4Signer.emptyPayload,
                                         date: Date(timeIntervalSince1970: 1_795_688_100))
            #expect(Self.signature(headers) == expected[index], "\(item.method) \(url)")
        }
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func botocoreAvailable() async -> Bool {
        (try? await python(["-c", "import botocore"])) != nil || ProcessInfo.processInfo.environment["BATCHFETCH_REQUIRE_NGINX"] == "1"
    }

    static func python(_ arguments: [String]) async throws -> String {
        let python = try await ToolRun.run(["python3"] + arguments, in: repository)
        guard python.status == 0 else { throw CocoaError(.fileReadUnknown) }
        return python.output
    }
}
