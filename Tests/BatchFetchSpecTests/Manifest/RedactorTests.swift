import BatchFetchSpec
import Testing

/// Environment values are hidden wherever they reappear, not only where they were written.
@Suite struct RedactorTests {
    let expander = VariableExpander(environment: ["PW": "hunter2!x", "TOKEN": "a/b c+d", "SHORT": "1"])

    @Test func valuesAreHiddenRawAndPercentEncoded() throws {
        let redactor = Redactor([
            try expander.expand("https://user:${PW}@h.example/f?token=${TOKEN}&n=${SHORT}").get(),
        ])
        #expect(redactor.redact("GET https://user:hunter2!x@h.example/next") == "GET https://user:${PW}@h.example/next")
        #expect(redactor.redact("Location: /f?token=a%2Fb%20c%2Bd") == "Location: /f?token=${TOKEN}")
        #expect(redactor.redact("token=a%2fb%20c%2bd") == "token=${TOKEN}")
        #expect(redactor.redact("token=a/b%20c+d") == "token=${TOKEN}")
        // Too short to hide in free text without garbling it; hidden where templated.
        #expect(redactor.redact("HTTP 416") == "HTTP 416")
    }

    @Test func jobsRedactTheirURLsHeadersAndBody() throws {
        let manifest = try ManifestLoader(environment: ["TOKEN": "tok-123456", "PW": "pw-abcdef"]).load(bytes: Array("""
            version: 1
            jobs:
              - id: a
                url: https://u:${PW}@h.example/f
                headers: {Authorization: "Bearer ${TOKEN}"}
            """.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        let redactor = manifest.jobs[0].redactor()
        #expect(redactor.redact("pw-abcdef tok-123456") == "${PW} ${TOKEN}")
    }
}
