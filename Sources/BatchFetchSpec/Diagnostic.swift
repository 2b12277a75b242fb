/// A 1-based position in a manifest file, as editors count lines and columns.
///
/// Kept in 32 bits each, as the YAML tree keeps them: every job carries four or more
/// (``JobSource``) for the whole run, 32 bytes a job more with 64-bit fields (30 MiB at a
/// million jobs). A value past `UInt32.max` (a line over 4 GiB long) is held as `UInt32.max`.
public struct SourceLocation: Hashable, Sendable, Comparable, Codable {
    private var storedLine: UInt32
    private var storedColumn: UInt32

    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = Self.stored(newValue) }
    }

    public var column: Int {
        get { Int(storedColumn) }
        set { storedColumn = Self.stored(newValue) }
    }

    public init(line: Int, column: Int) {
        storedLine = Self.stored(line)
        storedColumn = Self.stored(column)
    }

    private static func stored(_ value: Int) -> UInt32 {
        UInt32(clamping: value)
    }

    enum CodingKeys: String, CodingKey {
        case line, column
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(line: try container.decode(Int.self, forKey: .line), column: try container.decode(Int.self, forKey: .column))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(line, forKey: .line)
        try container.encode(column, forKey: .column)
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
        problems.append((location, Self.readable(message)))
    }

    /// The longest word a message shows whole; a longer one is cut in its middle.
    static let longestWord = 400

    /// `message` with every word (a run without spaces, such as an echoed URL) longer than
    /// ``longestWord`` cut to its start and end: a 1 MiB URL in a manifest gave 1 MiB of stderr.
    /// The location says where the whole value is.
    static func readable(_ message: String) -> String {
        guard message.utf8.count > longestWord else { return message }
        var pieces: [Substring] = []
        var changed = false
        for word in message.split(separator: " ", omittingEmptySubsequences: false) {
            guard word.count > longestWord else {
                pieces.append(word)
                continue
            }
            changed = true
            pieces.append("\(word.prefix(300))…[\(word.count - 360) characters]…\(word.suffix(60))")
        }
        return changed ? pieces.joined(separator: " ") : message
    }

    var isEmpty: Bool { problems.isEmpty }

    /// The problems as diagnostics of `file`, in file order (stable for equal positions).
    func diagnostics(file: String) -> [Diagnostic] {
        problems.enumerated()
            .sorted { ($0.element.location, $0.offset) < ($1.element.location, $1.offset) }
            .map { Diagnostic(file: file, location: $0.element.location, message: $0.element.message) }
    }
}
