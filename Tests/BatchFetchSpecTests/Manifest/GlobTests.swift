import BatchFetchSpec
import Testing

/// `include`/`exclude` patterns: `*` and `?` within a segment, `**` across segments (none
/// included), case-sensitive, on Unicode characters; malformed patterns refused with why.
@Suite struct GlobTests {
    static func glob(_ pattern: String) throws -> Glob {
        try Glob.parse(pattern).get()
    }

    @Test(arguments: [
        ("*.JPEG", "a.JPEG", true), ("*.JPEG", "val/a.JPEG", false), ("*.JPEG", "a.jpeg", false),
        ("**/*.JPEG", "a.JPEG", true), ("**/*.JPEG", "val/n01/a.JPEG", true), ("val/**", "val/n01/a.JPEG", true),
        ("val/**", "val", true), ("a/**/b", "a/b", true), ("a/**/b", "a/x/y/b", true), ("a/**/b", "a/x/y/c", false),
        ("?.txt", "é.txt", true), ("?.txt", "ab.txt", false), ("a*b*c", "axxbyyc", true), ("a*b*c", "axxbyy", false),
        ("*", "", false), ("data/*/x", "data/1/x", true), ("data/*/x", "data/1/2/x", false),
    ])
    func matches(_ pattern: String, _ path: String, _ expected: Bool) throws {
        #expect(try Self.glob(pattern).matches(path) == expected)
    }

    @Test func malformedPatternsAreRefusedWithWhy() {
        for (pattern, why) in [("", "empty pattern"), ("/a", "starts with '/'"), ("a//b", "empty path segment"),
                               ("a/", "empty path segment"), ("a**", "whole path segment")] {
            guard case .failure(let problem) = Glob.parse(pattern) else {
                Issue.record("'\(pattern)' was accepted")
                continue
            }
            #expect(problem.message.contains(why), "\(problem.message)")
        }
    }
}
