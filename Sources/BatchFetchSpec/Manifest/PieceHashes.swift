/// The sha256 of each fixed-length piece of a file (`pieces:` on a job, a lock's `pieces`, a
/// Metalink's `<pieces type="sha-256">`): a piece is checked as soon as its bytes are written, and
/// a bad one is fetched again alone (Docs/Mirrors.md).
public struct PieceHashes: Sendable, Equatable, Codable {
    /// Bytes per piece: a power of two from 256 KiB to 64 MiB. The last piece may be shorter.
    public var length: Int64
    /// Lowercase hex, one per piece in order.
    public var sha256: [String]

    public init(length: Int64, sha256: [String]) {
        self.length = length
        self.sha256 = sha256
    }

    /// The lengths a piece may have.
    public static let lengths: ClosedRange<Int64> = (256 << 10)...(64 << 20)
    /// What `pin --pieces` uses without a size.
    public static let defaultLength: Int64 = 4 << 20

    /// What is wrong with these hashes for a file of `total` bytes, or nil: a length the contract
    /// does not allow, a count that does not fit, a digest that is not 64 hex digits (a lock's
    /// `pieces`, which nothing validated when it was edited).
    public func problem(for total: Int64) -> String? {
        if !Self.allows(length) { return "pieces.length \(length) is not a power of two from 262144 to 67108864" }
        if !fits(total) { return "\(sha256.count) piece hashes do not fit \(total) bytes in pieces of \(length) (\(count(for: total)) expected)" }
        if let bad = sha256.first(where: { $0.count != 64 || !$0.allSatisfy(\.isHexDigit) }) { return "'\(bad)' is not a sha256" }
        return nil
    }

    /// Whether `length` is a piece length the contract allows.
    public static func allows(_ length: Int64) -> Bool {
        lengths.contains(length) && length & (length - 1) == 0
    }

    /// Pieces of a file of `total` bytes.
    public func count(for total: Int64) -> Int {
        Int((total + length - 1) / length)
    }

    /// Whether the hashes fit a file of `total` bytes (one per piece; an empty file has none).
    public func fits(_ total: Int64) -> Bool {
        sha256.count == count(for: total)
    }

    /// The bytes of piece `index` of a file of `total` bytes.
    public func range(of index: Int, total: Int64) -> Range<Int64> {
        let start = Int64(index) * length
        return start..<min(total, start + length)
    }
}
