/// A path pattern of `include`/`exclude`: `*` matches any characters within one `/` segment,
/// `?` one character of a segment, `**` as a whole segment any number of segments (none
/// included); everything else matches itself, case-sensitively. `*.JPEG` therefore matches
/// `a.JPEG` only at the top, and `**/*.JPEG` at any depth: the same rules as object-store
/// prefixes, so one pattern means one thing everywhere in a manifest.
package struct Glob: Sendable, Hashable {
    package let pattern: String
    private let segments: [Substring]

    /// The pattern, or why it is not one (for validation, with the value's location).
    package static func parse(_ pattern: String) -> Result<Glob, GlobProblem> {
        if pattern.isEmpty { return .failure(GlobProblem("an empty pattern matches nothing")) }
        if pattern.hasPrefix("/") { return .failure(GlobProblem("'\(pattern)' starts with '/': patterns match paths inside the tree, which are relative")) }
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: false)
        if segments.contains(where: \.isEmpty) { return .failure(GlobProblem("'\(pattern)' has an empty path segment ('//' or a trailing '/')")) }
        if let bad = segments.first(where: { $0 != "**" && $0.contains("**") }) {
            return .failure(GlobProblem("'\(pattern)': '**' must be a whole path segment (as in 'a/**/b'), not part of '\(bad)'"))
        }
        return .success(Glob(pattern: pattern, segments: segments))
    }

    private init(pattern: String, segments: [Substring]) {
        self.pattern = pattern
        self.segments = segments
    }

    /// Whether `path` (relative, `/`-separated, no empty segments) matches.
    package func matches(_ path: String) -> Bool {
        Self.match(segments[...], path.split(separator: "/")[...])
    }

    private static func match(_ pattern: ArraySlice<Substring>, _ path: ArraySlice<Substring>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == "**" {
            let rest = pattern.dropFirst()
            var remaining = path
            while true {
                if match(rest, remaining) { return true }
                guard !remaining.isEmpty else { return false }
                remaining = remaining.dropFirst()
            }
        }
        guard let segment = path.first, matchSegment(Array(first.unicodeScalars)[...], Array(segment.unicodeScalars)[...]) else { return false }
        return match(pattern.dropFirst(), path.dropFirst())
    }

    /// `*` and `?` within one segment, on Unicode scalars (`?` is one character as the archive
    /// spells it: names are not normalised).
    private static func matchSegment(_ pattern: ArraySlice<Unicode.Scalar>, _ text: ArraySlice<Unicode.Scalar>) -> Bool {
        var p = pattern.startIndex, t = text.startIndex
        var star: Int?, resume = text.startIndex
        while t < text.endIndex {
            if p < pattern.endIndex, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.endIndex, pattern[p] == "*" {
                star = p
                p += 1
                resume = t
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.endIndex, pattern[p] == "*" { p += 1 }
        return p == pattern.endIndex
    }
}

/// Why a glob pattern is refused.
package struct GlobProblem: Error, Sendable, Equatable {
    package let message: String

    init(_ message: String) {
        self.message = message
    }
}
