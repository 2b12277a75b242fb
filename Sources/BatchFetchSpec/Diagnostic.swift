/// A 1-based position in a manifest file or one of its job lists, as editors count lines and
/// columns.
///
/// Kept in 32 bits each, as the YAML tree keeps them: every job carries four or more
/// (``JobSource``) for the whole run, 32 bytes a job more with 64-bit fields (30 MiB at a
/// million jobs). A line past `UInt32.max` is held as `UInt32.max`.
///
/// ``file`` says which file: 0 is the manifest, `k` its `k`-th `jobs_from` list. It lives in the
/// top byte of the column (columns beyond 16,777,215 are held as that), so a list job's
/// locations cost no more than a YAML job's.
public struct SourceLocation: Hashable, Sendable, Comparable, Codable {
    private var storedLine: UInt32
    private var storedColumn: UInt32

    /// The most files a location can name: the manifest and 255 lists.
    public static let maximumFileCount = 256
    private static let columnMask: UInt32 = (1 << 24) - 1

    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = UInt32(clamping: newValue) }
    }

    public var column: Int {
        get { Int(storedColumn & Self.columnMask) }
        set { storedColumn = (storedColumn & ~Self.columnMask) | min(UInt32(clamping: newValue), Self.columnMask) }
    }

    /// 0: the manifest; `k`: the manifest's `k`-th job list (``Manifest/lists``).
    public var file: Int {
        get { Int(storedColumn >> 24) }
        set { storedColumn = (storedColumn & Self.columnMask) | (UInt32(clamping: min(newValue, 255)) << 24) }
    }

    public init(line: Int, column: Int, file: Int = 0) {
        storedLine = UInt32(clamping: line)
        storedColumn = 0
        self.column = column
        self.file = file
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

    /// File order, then line and column.
    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
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

    /// The problems as diagnostics, in file order (stable for equal positions): `files[0]` is
    /// the manifest, `files[k]` its `k`-th job list (``SourceLocation/file``).
    func diagnostics(files: [String]) -> [Diagnostic] {
        problems.enumerated()
            .sorted { ($0.element.location, $0.offset) < ($1.element.location, $1.offset) }
            .map { problem in
                let location = problem.element.location
                let file = location.file < files.count ? files[location.file] : files[0]
                return Diagnostic(file: file, location: location, message: problem.element.message)
            }
    }
}
