/// A 1-based position in a manifest file, as editors count lines and columns.
public struct SourceLocation: Hashable, Sendable, Comparable, Codable {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// The start of the file; used for problems that concern the file as a whole.
    public static let start = SourceLocation(line: 1, column: 1)

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }
}

/// One problem found in a manifest, with the place it was found.
///
/// Printed as `file:line:column: error: message`, the form compilers use, so editors and CI log
/// viewers turn it into a link.
public struct Diagnostic: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Severity: String, Sendable, Codable {
        case error
        case warning
    }

    public var file: String
    public var line: Int
    public var column: Int
    public var severity: Severity
    public var message: String

    public init(file: String, location: SourceLocation, severity: Severity = .error, message: String) {
        self.file = file
        self.line = location.line
        self.column = location.column
        self.severity = severity
        self.message = message
    }

    public var location: SourceLocation { SourceLocation(line: line, column: column) }

    public var description: String {
        "\(file):\(line):\(column): \(severity.rawValue): \(message)"
    }
}

/// Collects problems while decoding and validating, so one pass reports all of them.
struct ProblemCollector {
    private(set) var problems: [(location: SourceLocation, message: String)] = []

    mutating func error(_ message: String, at location: SourceLocation) {
        problems.append((location, message))
    }

    var isEmpty: Bool { problems.isEmpty }

    /// The problems as diagnostics of `file`, in file order (stable for equal positions).
    func diagnostics(file: String) -> [Diagnostic] {
        problems.enumerated()
            .sorted { ($0.element.location, $0.offset) < ($1.element.location, $1.offset) }
            .map { Diagnostic(file: file, location: $0.element.location, message: $0.element.message) }
    }
}
