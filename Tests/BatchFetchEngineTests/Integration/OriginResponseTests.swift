@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
@testable import TestOrigin
import Testing

/// The TestOrigin's own answers, so the integration tests' peer is known to speak HTTP correctly.
@Suite struct OriginResponseTests {
    static let file = OriginFile(content: .generated(size: 1000, seed: 1))

    private func respond(_ file: OriginFile?, _ method: String = "GET", _ headers: [(String, String)] = [],
                         fault: OriginFile.Fault? = nil) -> OriginResponse {
        OriginResponse.make(for: file, method: method, requestHeaders: headers, fault: fault)
    }

    private func header(_ response: OriginResponse, _ name: String) -> String? {
        response.headers.first { $0.0 == name }?.1
    }

    @Test func rangeForms() {
        #expect(OriginResponse.parseRange("bytes=100-", size: 1000) == .satisfiable(100..<1000))
        #expect(OriginResponse.parseRange("bytes=100-199", size: 1000) == .satisfiable(100..<200))
        #expect(OriginResponse.parseRange("bytes=-10", size: 1000) == .satisfiable(990..<1000))
        #expect(OriginResponse.parseRange("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(OriginResponse.parseRange("bytes=0-1,5-6", size: 1000) == .malformed)
    }

    @Test func rangeAnswersPartialContentWithContentRange() {
        let response = respond(Self.file, "GET", [("Range", "bytes=900-")])
        #expect(response.status == 206)
        #expect(header(response, "Content-Range") == "bytes 900-999/1000")
        #expect(header(response, "Content-Length") == "100")
        #expect(response.body == 900..<1000)
    }

    @Test func ifRangeMustMatchTheStrongETagOrTheDate() {
        let etag = Self.file.etag!
        #expect(respond(Self.file, "GET", [("Range", "bytes=10-"), ("If-Range", etag)]).status == 206)
        #expect(respond(Self.file, "GET", [("Range", "bytes=10-"), ("If-Range", "\"other\"")]).status == 200)
        #expect(respond(Self.file, "GET", [("Range", "bytes=10-"), ("If-Range", "W/" + etag)]).status == 200)
        #expect(respond(Self.file, "GET", [("Range", "bytes=10-"), ("If-Range", Self.file.lastModified!)]).status == 206)
    }

    @Test func unsatisfiableRangeIs416WithTheSize() {
        let response = respond(Self.file, "GET", [("Range", "bytes=1000-")])
        #expect(response.status == 416)
        #expect(header(response, "Content-Range") == "bytes */1000")
    }

    @Test func headRefusedAndFaults() {
        var refusing = Self.file
        refusing.refusesHead = true
        #expect(respond(refusing, "HEAD").status == 405)
        #expect(respond(Self.file, "HEAD").body.isEmpty)
        let busy = respond(Self.file, fault: .status(503, retryAfter: "7"))
        #expect(busy.status == 503 && header(busy, "Retry-After") == "7")
        #expect(respond(nil).status == 404)
    }

    @Test func replacingContentChangesTheValidators() {
        var changed = Self.file
        changed.content = .generated(size: 1000, seed: 2)
        changed.version += 1
        #expect(changed.etag != Self.file.etag)
        #expect(changed.lastModified != Self.file.lastModified)
    }
}
