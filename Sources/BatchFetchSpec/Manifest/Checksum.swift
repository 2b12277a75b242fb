/// An expected digest, written `algorithm:hex` in the manifest.
public struct Checksum: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Algorithm: String, CaseIterable, Sendable, Codable {
        case sha256, sha512, sha1, md5

        /// Length of the digest in hex digits.
        public var hexLength: Int {
            switch self {
            case .sha256: return 64
            case .sha512: return 128
            case .sha1: return 40
            case .md5: return 32
            }
        }
    }

    public var algorithm: Algorithm
    /// Lowercase hex.
    public var hex: String

    public init(algorithm: Algorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    public var description: String { "\(algorithm.rawValue):\(hex)" }

    public enum ParseError: Error, Equatable {
        case missingAlgorithm
        case unknownAlgorithm(String)
        case wrongLength(Algorithm, Int)
        case notHex(Algorithm)
    }

    /// Parses `sha256:9F86...`; hex may be uppercase and is normalised to lowercase.
    public static func parse(_ text: String) -> Result<Checksum, ParseError> {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else { return .failure(.missingAlgorithm) }
        let name = String(text[..<colon])
        let hex = String(text[text.index(after: colon)...])
        guard let algorithm = Algorithm(rawValue: name) else { return .failure(.unknownAlgorithm(name)) }
        guard hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }) else { return .failure(.notHex(algorithm)) }
        guard hex.utf8.count == algorithm.hexLength else { return .failure(.wrongLength(algorithm, hex.utf8.count)) }
        return .success(Checksum(algorithm: algorithm, hex: hex))
    }
}
