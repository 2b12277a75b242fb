/// What a decoding problem's message starts with (`job 'a': `, `defaults: `), written out only when
/// a problem is reported.
///
/// Every job has a context, and building it as a string (`"job '\(id)': "`) cost two string
/// allocations per job, measurable at a million jobs; almost all of them were never printed.
struct ProblemContext: CustomStringConvertible, ExpressibleByStringLiteral, Sendable {
    private enum Kind: Sendable {
        case text(String)
        case jobNumber(Int)
        case jobID(String)
    }

    private let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    init(stringLiteral value: String) {
        kind = .text(value)
    }

    /// A job known by its place in `jobs` (1-based), before its id is known or when it has none.
    static func job(number: Int) -> ProblemContext { ProblemContext(.jobNumber(number)) }

    static func job(id: String) -> ProblemContext { ProblemContext(.jobID(id)) }

    /// This context followed by `suffix` (`job 'a': tls: `).
    func appending(_ suffix: String) -> ProblemContext { ProblemContext(.text(description + suffix)) }

    var description: String {
        switch kind {
        case .text(let text): return text
        case .jobNumber(let number): return "job #\(number): "
        case .jobID(let id): return "job '\(id)': "
        }
    }
}
