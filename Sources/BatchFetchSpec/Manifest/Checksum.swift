/// An expected digest, written `algorithm:hex` in the manifest.
///
/// Held as its bytes, not its hex: a million-job list pinned by sha256 kept a 64-digit string
/// per job (112 bytes of heap each, besides the array holding it); the bytes sit inline in the
/// job. ``hex`` spells them on demand. A sha512 digest (64 bytes) lives in a box of its own,
/// and a value that is not hex of the algorithm's length (only ``init(algorithm:hex:)`` makes
/// one; ``parse(_:)`` refuses it) keeps its text.
public struct Checksum: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Algorithm: String, CaseIterable, Sendable, Codable {
        case sha256, sha512, sha1, md5
        /// A git blob id: sha1 over `blob {size}\0` and the bytes, as a Hugging Face tree lists
        /// a file that is not in LFS (Docs/Sources.md). Checking it needs the size first, so a
        /// job that pins one also pins its `size`.
        case gitSHA1 = "git-sha1"

        /// Length of the digest in hex digits.
        public var hexLength: Int {
            switch self {
            case .sha256: return 64
            case .sha512: return 128
            case .sha1, .gitSHA1: return 40
            case .md5: return 32
            }
        }
    }

    /// The digest: up to 32 bytes inline, big-endian in four words (the unused tail zero).
    private enum Storage: Hashable, Sendable {
        case sha256(Words)
        case sha1(Words)
        case gitSHA1(Words)
        case md5(Words)
        case sha512(Long)
        case text(Algorithm, String)
    }

    fileprivate struct Words: Hashable, Sendable {
        var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64
    }

    /// A sha512 digest's 64 bytes.
    private final class Long: Hashable, Sendable {
        let head: Words, tail: Words

        init(head: Words, tail: Words) {
            self.head = head
            self.tail = tail
        }

        static func == (left: Long, right: Long) -> Bool { left.head == right.head && left.tail == right.tail }
        func hash(into hasher: inout Hasher) {
            hasher.combine(head)
            hasher.combine(tail)
        }
    }

    private var storage: Storage

    public var algorithm: Algorithm {
        switch storage {
        case .sha256: return .sha256
        case .sha1: return .sha1
        case .gitSHA1: return .gitSHA1
        case .md5: return .md5
        case .sha512: return .sha512
        case .text(let algorithm, _): return algorithm
        }
    }

    /// Lowercase hex.
    public var hex: String {
        switch storage {
        case .sha256(let words): return Self.hex([words], digits: 64)
        case .sha1(let words), .gitSHA1(let words): return Self.hex([words], digits: 40)
        case .md5(let words): return Self.hex([words], digits: 32)
        case .sha512(let long): return Self.hex([long.head, long.tail], digits: 128)
        case .text(_, let text): return text
        }
    }

    public init(algorithm: Algorithm, hex: String) {
        self.init(algorithm: algorithm, lowercaseHex: hex.lowercased())
    }

    private enum CodingKeys: String, CodingKey {
        case algorithm, hex
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(algorithm: try container.decode(Algorithm.self, forKey: .algorithm),
                  hex: try container.decode(String.self, forKey: .hex))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(algorithm, forKey: .algorithm)
        try container.encode(hex, forKey: .hex)
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

    private init(algorithm: Algorithm, lowercaseHex hex: String) {
        var hex = hex
        let digits = algorithm.hexLength
        guard hex.utf8.count == digits,
              let head = hex.withUTF8({ Words(hex: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0).prefix(64))) }),
              let tail = digits > 64 ? hex.withUTF8({ Words(hex: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0).dropFirst(64))) })
                                     : Words(w0: 0, w1: 0, w2: 0, w3: 0) else {
            storage = .text(algorithm, hex)
            return
        }
        switch algorithm {
        case .sha256: storage = .sha256(head)
        case .sha1: storage = .sha1(head)
        case .gitSHA1: storage = .gitSHA1(head)
        case .md5: storage = .md5(head)
        case .sha512: storage = .sha512(Long(head: head, tail: tail))
        }
    }

    /// The first `digits` hex digits of `groups` (64 digits each), lowercase.
    private static func hex(_ groups: [Words], digits: Int) -> String {
        String(unsafeUninitializedCapacity: digits) { buffer in
            let alphabet: StaticString = "0123456789abcdef"
            for position in 0..<digits {
                let index = position % 64
                let word = groups[position / 64][index / 16]
                buffer[position] = alphabet.utf8Start[Int((word >> (60 - 4 * UInt64(index % 16))) & 0xF)]
            }
            return digits
        }
    }
}

extension Checksum.Words {
    /// Up to 64 lowercase hex digits, big-endian, the unused tail zero; nil at any other
    /// character.
    init?(hex digits: UnsafeRawBufferPointer) {
        var values: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for (position, digit) in digits.enumerated() {
            let nibble: UInt64
            switch digit {
            case 0x30...0x39: nibble = UInt64(digit - 0x30)
            case 0x61...0x66: nibble = UInt64(digit - 0x61 + 10)
            default: return nil
            }
            let shifted = nibble << (60 - 4 * UInt64(position % 16))
            switch position / 16 {
            case 0: values.0 |= shifted
            case 1: values.1 |= shifted
            case 2: values.2 |= shifted
            default: values.3 |= shifted
            }
        }
        self.init(w0: values.0, w1: values.1, w2: values.2, w3: values.3)
    }

    subscript(index: Int) -> UInt64 {
        switch index {
        case 0: return w0
        case 1: return w1
        case 2: return w2
        default: return w3
        }
    }
}
