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
    ///
    /// Works on the text's bytes and lowercases only when there is an uppercase digit: a
    /// million-job manifest spent most of its checksum time in `String` slicing and `lowercased()`.
    public static func parse(_ text: String) -> Result<Checksum, ParseError> {
        var text = text
        return text.withUTF8 { bytes in
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return .failure(.missingAlgorithm) }
            let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self)
            guard let algorithm = Algorithm(rawValue: name) else { return .failure(.unknownAlgorithm(name)) }
            let digits = UnsafeBufferPointer(rebasing: bytes[(colon + 1)...])
            var uppercase = false
            for byte in digits {
                if byte >= 0x30 && byte <= 0x39 || byte >= 0x61 && byte <= 0x66 { continue }
                guard byte >= 0x41 && byte <= 0x46 else { return .failure(.notHex(algorithm)) }
                uppercase = true
            }
            guard digits.count == algorithm.hexLength else { return .failure(.wrongLength(algorithm, digits.count)) }
            let hex = String(decoding: digits, as: UTF8.self)
            return .success(uppercase ? Checksum(algorithm: algorithm, hex: hex) : Checksum(algorithm: algorithm, lowercaseHex: hex))
        }
    }

    private init(algorithm: Algorithm, lowercaseHex: String) {
        self.algorithm = algorithm
        self.hex = lowercaseHex
    }
}
