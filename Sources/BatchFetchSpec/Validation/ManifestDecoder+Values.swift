/// Typed reads of single values; each reports its own problem and returns nil on failure.
extension ManifestDecoder {
    enum QuantityKind {
        case size, rate, duration

        var example: String {
            switch self {
            case .size: return "a size such as 123, 10KB or 1.5GiB"
            case .rate: return "a rate such as 50MB/s"
            case .duration: return "a duration such as 500ms, 30s, 5m or 2h"
            }
        }
    }

    /// Why a `size` value is refused: its message, without the job's context.
    struct SizeProblem: Error {
        let message: String
    }

    /// A `size` value (`123`, `1.5GiB`), of a YAML job or of a job list's row alike.
    static func size(_ text: String) -> Result<Int64, SizeProblem> {
        if text.hasPrefix("-") { return .failure(SizeProblem(message: "'size' must not be negative, found '\(text)'")) }
        return Quantity.bytes(text).mapError { SizeProblem(message: "'size': \(describe($0, kind: .size, text: text))") }
    }

    /// Thirty days: longer durations are mistakes, and would overflow nanosecond timers.
    static let longestDuration = 30.0 * 86_400

    /// The text of a non-null scalar.
    mutating func scalarText(_ entry: YAMLMappingEntry, context: ProblemContext, expected: String) -> String? {
        guard let scalar = entry.value.scalar, !entry.value.isNull else {
            problems.error("\(context)'\(entry.key)' must be \(expected), found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return nil
        }
        return scalar.value
    }

    mutating func string(_ entry: YAMLMappingEntry, context: ProblemContext) -> String? {
        scalarText(entry, context: context, expected: "a string")
    }

    /// A string naming one case of `E` (its raw value); else an error at the value that lists
    /// the cases and suggests the nearest. One reading for every enum setting (`sources`,
    /// `refresh`, `cache_link`), so each says the same thing the same way.
    mutating func oneOf<E: CaseIterable & RawRepresentable>(_ entry: YAMLMappingEntry, context: ProblemContext) -> E?
        where E.RawValue == String {
        guard let text = string(entry, context: context) else { return nil }
        if let value = E(rawValue: text) { return value }
        let names = E.allCases.map(\.rawValue)
        problems.error("\(context)'\(entry.key)' must be one of \(names.joined(separator: ", ")), found '\(text)'"
            + Suggestion.hint(for: text, in: names), at: entry.value.location)
        return nil
    }

    /// A plain integer within `range`; quoted numbers are strings and rejected.
    mutating func integer(_ entry: YAMLMappingEntry, context: ProblemContext, range: ClosedRange<Int>) -> Int? {
        guard let text = scalarText(entry, context: context, expected: "an integer") else { return nil }
        let bounds = range.upperBound == Int.max ? "at least \(range.lowerBound)"
            : "from \(range.lowerBound) to \(range.upperBound)"
        guard entry.value.scalar?.style == .plain, let value = Int(text) else {
            if entry.value.scalar?.style == .plain, !text.isEmpty, text.drop(while: { $0 == "-" }).allSatisfy(\.isNumber) {
                // Digits only, too many for an Int: out of range, not "not an integer".
                problems.error("\(context)'\(entry.key)' must be \(bounds), found \(text)", at: entry.value.location)
                return nil
            }
            let found = entry.value.scalar?.style == .plain ? "'\(text)'" : "the quoted string '\(text)'"
            problems.error("\(context)'\(entry.key)' must be an integer, found \(found)", at: entry.value.location)
            return nil
        }
        guard range.contains(value) else {
            problems.error("\(context)'\(entry.key)' must be \(bounds), found \(value)", at: entry.value.location)
            return nil
        }
        return value
    }

    mutating func duration(_ entry: YAMLMappingEntry, context: ProblemContext) -> Double? {
        guard let text = scalarText(entry, context: context, expected: QuantityKind.duration.example) else { return nil }
        switch Quantity.seconds(text) {
        case .success(let seconds) where seconds > Self.longestDuration:
            problems.error("\(context)'\(entry.key)' must be at most 30d, found '\(text)'", at: entry.value.location)
            return nil
        case .success(let seconds):
            return seconds
        case .failure(let error):
            problems.error("\(context)'\(entry.key)': \(Self.describe(error, kind: .duration, text: text))",
                           at: entry.value.location)
            return nil
        }
    }

    mutating func boolean(_ entry: YAMLMappingEntry, context: ProblemContext) -> Bool? {
        guard let text = scalarText(entry, context: context, expected: "true or false") else { return nil }
        switch (entry.value.scalar?.style, text) {
        case (.plain, "true"), (.plain, "True"), (.plain, "TRUE"): return true
        case (.plain, "false"), (.plain, "False"), (.plain, "FALSE"): return false
        default:
            problems.error("\(context)'\(entry.key)' must be true or false, found '\(text)'", at: entry.value.location)
            return nil
        }
    }

    /// A string or a list of strings, each with its location.
    mutating func stringList(_ entry: YAMLMappingEntry, context: ProblemContext) -> [(String, SourceLocation)] {
        if let items = entry.value.sequence {
            var result: [(String, SourceLocation)] = []
            for item in items {
                if let scalar = item.scalar, !item.isNull {
                    result.append((scalar.value, item.location))
                } else {
                    problems.error("\(context)'\(entry.key)' entries must be strings, found \(item.kindDescription)",
                                   at: item.location)
                }
            }
            return result
        }
        guard let text = scalarText(entry, context: context, expected: "a string or a list of strings") else {
            return []
        }
        return [(text, entry.value.location)]
    }

    /// A string with `${VAR}` expanded from the environment.
    mutating func templated(
        _ entry: YAMLMappingEntry, context: ProblemContext, describedAs name: String? = nil
    ) -> TemplatedString? {
        // Built only for a message: an interpolation per URL and dest was measurable at 1M jobs.
        var label: String { name ?? "'\(entry.key)'" }
        guard let scalar = entry.value.scalar, !entry.value.isNull else {
            problems.error("\(context)\(label) must be a string, found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return nil
        }
        return templated(scalar.value, at: entry.value.location, context: context, label: label)
    }

    /// `text` (written at `location`, named `label` in messages) with `${VAR}` expanded.
    mutating func templated(_ text: String, at location: SourceLocation, context: ProblemContext, label: String) -> TemplatedString? {
        switch expander.expand(text) {
        case .success(let value):
            return value
        case .failure(.unset(let variable)):
            problems.error(
                "\(context)\(label) uses environment variable '\(variable)', which is not set "
                    + "(set it, or write ${\(variable):-default})",
                at: location)
        case .failure(.malformed(let reason)):
            problems.error("\(context)\(label): \(reason)", at: location)
        }
        return nil
    }

    static func describe(_ error: QuantityError, kind: QuantityKind, text: String) -> String {
        switch error {
        case .malformed:
            return "expected \(kind.example), found '\(text)'"
        case .unknownUnit(let unit):
            return "unknown unit '\(unit)' in '\(text)'; expected \(kind.example)"
        case .missingUnit where kind == .duration:
            let suggestion = text.last?.isNumber == true ? " (did you mean '\(text)s'?)" : ""
            return "'\(text)' needs a unit after every number — ms, s, m, h or d, as in 30s, 1m30s or 2h\(suggestion)"
        case .missingUnit:
            return "'\(text)' needs a unit; expected \(kind.example)"
        case .missingPerSecond:
            return "'\(text)' is not a rate; expected \(kind.example)"
        case .tooLarge:
            switch kind {
            case .duration: return "'\(text)' is too large (at most 30d)"
            case .size: return "'\(text)' is too large (at most 9223372036854775807 bytes)"
            case .rate: return "'\(text)' is too large (at most 9223372036854775807 bytes per second)"
            }
        }
    }
}
