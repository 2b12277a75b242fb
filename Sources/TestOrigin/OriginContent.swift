/// The bytes an origin path serves: literal bytes, or deterministic pseudo-random bytes of any
/// size that are generated on the fly (a 1 GiB test file costs no memory and no disk).
public enum OriginContent: Sendable, Equatable {
    case bytes([UInt8])
    case generated(size: Int64, seed: UInt64)

    public var size: Int64 {
        switch self {
        case .bytes(let bytes): return Int64(bytes.count)
        case .generated(let size, _): return size
        }
    }

    /// The bytes in `range` (clamped to the content).
    public func bytes(in range: Range<Int64>) -> [UInt8] {
        let lower = max(0, range.lowerBound), upper = min(size, range.upperBound)
        guard lower < upper else { return [] }
        switch self {
        case .bytes(let bytes):
            return Array(bytes[Int(lower)..<Int(upper)])
        case .generated(_, let seed):
            var result = [UInt8](repeating: 0, count: Int(upper - lower))
            var block = lower / 8
            var position = 0
            var offset = Int(lower % 8)
            while position < result.count {
                var word = Self.mix(seed &+ UInt64(block) &* 0x9E37_79B9_7F4A_7C15)
                word >>= UInt64(offset * 8)
                for _ in offset..<8 where position < result.count {
                    result[position] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    position += 1
                }
                offset = 0
                block += 1
            }
            return result
        }
    }

    /// All the bytes; for tests with small content.
    public var allBytes: [UInt8] { bytes(in: 0..<size) }

    /// SplitMix64's finaliser: fast, and different seeds give unrelated streams.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A short fingerprint used to derive ETags, so new content gets a new ETag.
    var fingerprint: UInt64 {
        switch self {
        case .generated(let size, let seed):
            return Self.mix(seed ^ UInt64(bitPattern: size))
        case .bytes(let bytes):
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
            return hash
        }
    }
}
