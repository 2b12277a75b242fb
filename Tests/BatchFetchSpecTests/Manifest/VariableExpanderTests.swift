import BatchFetchSpec
import Testing

@Suite struct VariableExpanderTests {
    let expander = VariableExpander(environment: ["TOKEN": "s3cret", "EMPTY": "", "HOST": "mirror.example"])

    @Test func environmentValuesAreResolvedButRedactedForPrinting() throws {
        let value = try expander.expand("Bearer ${TOKEN}").get()
        #expect(value.resolved == "Bearer s3cret")
        #expect(value.redacted == "Bearer ${TOKEN}")
        #expect(value.secrets == [TemplatedString.Secret(name: "TOKEN", value: "s3cret")])
    }

    @Test func defaultsApplyWhenUnsetOrEmptyAndAreNotSecret() throws {
        let unset = try expander.expand("${MISSING:-https://a.example}/x").get()
        #expect(unset.resolved == "https://a.example/x")
        #expect(unset.redacted == "https://a.example/x")
        #expect(unset.secrets.isEmpty)
        #expect(try expander.expand("${EMPTY:-fallback}").get().resolved == "fallback")
        #expect(try expander.expand("${HOST:-other}").get().resolved == "mirror.example")
    }

    @Test func unsetWithoutDefaultFails() throws {
        #expect(expander.expand("https://${MISSING}/x") == .failure(.unset("MISSING")))
    }

    @Test func dollarsThatAreNotReferencesStayLiteral() throws {
        #expect(try expander.expand("price$5").get().resolved == "price$5")
        #expect(try expander.expand("literal $${TOKEN}").get().resolved == "literal ${TOKEN}")
        #expect(try expander.expand("literal $${TOKEN}").get().secrets.isEmpty)
    }

    @Test func malformedReferences() throws {
        #expect(expander.expand("${TOKEN") == .failure(.malformed("'${' without a closing '}'")))
        if case .failure(.malformed) = expander.expand("${1X}") {} else { Issue.record("accepted ${1X}") }
    }
}
