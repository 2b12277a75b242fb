@testable import BatchFetchSpec
import Testing

@Suite struct YAMLParserTests {
    private func parse(_ text: String) -> YAMLParseResult {
        YAMLParser.parse(Array(text.utf8))
    }

    @Test func nodesKeepOneBasedLineAndColumn() throws {
        let result = parse("a: 1\nlist:\n  - x\n  - {k: v}\n")
        #expect(result.problems.isEmpty)
        let root = try #require(result.root?.mapping)
        #expect(root.map(\.key) == ["a", "list"])
        #expect(root[0].keyLocation == SourceLocation(line: 1, column: 1))
        #expect(root[0].value.location == SourceLocation(line: 1, column: 4))
        let list = try #require(root[1].value.sequence)
        #expect(list[0].location == SourceLocation(line: 3, column: 5))
        let inner = try #require(list[1].mapping)
        #expect(inner[0].keyLocation == SourceLocation(line: 4, column: 6))
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let result = parse("é: ü\nk: v\n")
        let root = try #require(result.root?.mapping)
        #expect(root[0].value.location == SourceLocation(line: 1, column: 4))
    }

    @Test func scalarsStayTextWithTheirStyle() throws {
        let root = try #require(parse("a: 8\nb: '8'\nc: no\n").root?.mapping)
        #expect(root[0].value.scalar == YAMLScalar(value: "8", style: .plain))
        #expect(root[1].value.scalar == YAMLScalar(value: "8", style: .singleQuoted))
        #expect(root[2].value.scalar?.value == "no")
    }

    @Test func duplicateKeysAreReportedAndTheFirstKept() throws {
        let result = parse("a: 1\nb: 2\na: 3\n")
        #expect(result.problems.map(\.message) == ["duplicate key 'a' (first defined at line 1, column 1)"])
        #expect(result.problems.first?.location == SourceLocation(line: 3, column: 1))
        let root = try #require(result.root?.mapping)
        #expect(root.count == 2)
        #expect(root[0].value.scalar?.value == "1")
    }

    @Test func mergeKeysFillInWithoutOverridingExplicitKeys() throws {
        let text = """
            base: &base {retries: 2, timeout: 5s}
            job:
              <<: *base
              retries: 7
            """
        let result = parse(text)
        #expect(result.problems.isEmpty)
        let job = try #require(result.root?.mapping?[1].value.mapping)
        #expect(job.map(\.key) == ["retries", "timeout"])
        #expect(job[0].value.scalar?.value == "7")
        #expect(job[1].value.scalar?.value == "5s")
    }

    @Test func aliasesShareTheAnchoredNode() throws {
        let root = try #require(parse("a: &x [1, 2]\nb: *x\n").root?.mapping)
        #expect(root[1].value.sequence?.count == 2)
        #expect(root[1].value.location == SourceLocation(line: 2, column: 4))
    }

    @Test func billionLaughsStopsAtTheBudget() {
        var text = "l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n"
        for level in 1...9 {
            text += "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        let result = parse(text)
        #expect(result.root == nil)
        #expect(result.problems.count == 1)
        #expect(result.problems.first?.message.contains("aliases expand to more than 1000000 nodes") == true)
    }

    @Test func aliasesAreBoundedByBytesAsWellAsNodes() {
        // One 1 MiB scalar aliased 600 times: 600 nodes, but 600 MiB once decoded.
        let big = String(repeating: "x", count: 1 << 20)
        let text = "big: &big \(big)\nlist: [" + Array(repeating: "*big", count: 600).joined(separator: ", ") + "]\n"
        let result = parse(text)
        #expect(result.root == nil)
        #expect(result.problems.map(\.message) == ["aliases expand to more than 16 MiB of text; refusing to expand further"])
        #expect(result.problems.first?.location == SourceLocation(line: 2, column: 104))
        let fine = parse("big: &big \(big)\nlist: [" + Array(repeating: "*big", count: 15).joined(separator: ", ") + "]\n")
        #expect(fine.problems.isEmpty)
    }

    @Test func nestingOfSixtyFourIsAllowedButNotSixtyFive() {
        let ok = parse(String(repeating: "[", count: 64) + String(repeating: "]", count: 64))
        #expect(ok.problems.isEmpty)
        let deep = parse(String(repeating: "[", count: 65) + String(repeating: "]", count: 65))
        #expect(deep.problems.map(\.message) == ["nesting deeper than 64 levels"])
        #expect(deep.problems.first?.location == SourceLocation(line: 1, column: 65))
    }

    @Test func secondDocumentIsRejected() {
        let result = parse("a: 1\n---\nb: 2\n")
        #expect(result.problems.map(\.location) == [SourceLocation(line: 2, column: 1)])
    }

    @Test func libyamlSyntaxErrorsAreExplainedAndCarryItsProblemText() {
        let result = parse("a: [1, 2\n")
        #expect(result.problems.count == 1)
        #expect(result.problems.first?.message.hasPrefix("YAML syntax error: a '[' or '{' is not closed") == true)
        #expect(result.problems.first?.message.contains("(libyaml: did not find expected ',' or ']'") == true)
        let tab = parse("a:\n\t- b\n")
        #expect(tab.problems.first?.message.hasPrefix("YAML syntax error: a tab character; YAML indents with spaces only") == true)
        #expect(tab.problems.first?.location == SourceLocation(line: 2, column: 1))
    }

    @Test func invalidUTF8IsLocatedAtTheBadByte() {
        let result = YAMLParser.parse(Array("a: ok\nb: x".utf8) + [0xFF] + Array("\n".utf8))
        #expect(result.problems.map(\.location) == [SourceLocation(line: 2, column: 5)])
        #expect(result.problems.first?.message.contains("0xFF") == true)
    }

    @Test func overlongAndSurrogateEncodingsAreNotUTF8() {
        #expect(UTF8Check.firstInvalidByte(in: [0x61, 0xC0, 0xAF]) == 1)
        #expect(UTF8Check.firstInvalidByte(in: [0xED, 0xA0, 0x80]) == 0)
        #expect(UTF8Check.firstInvalidByte(in: [0xE2, 0x82]) == 0)
        #expect(UTF8Check.firstInvalidByte(in: Array("€ 𝄞 ok".utf8)) == nil)
    }
}
