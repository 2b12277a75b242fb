/// Parses the manifest's human-friendly quantities: byte sizes, transfer rates and durations.
///
/// Units are explicit so that `10MB` and `10MiB` mean what they say (decimal vs binary), and a
/// bare number is bytes for sizes but an error for durations, where `30` could be seconds or
/// milliseconds and guessing wrong is costly.
package enum Quantity {
    private static let sizeUnits: [String: Double] = [
        "": 1, "b": 1,
        "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
        "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
        "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
    ]

    /// Units of durations, with the words people write (`1 hour`, `90 seconds`).
    private static let durationUnits: [String: Double] = [
        "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400,
        "sec": 1, "secs": 1, "second": 1, "seconds": 1, "mins": 60, "minute": 60, "minutes": 60,
        "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "day": 86_400, "days": 86_400,
    ]

    /// A byte count such as `123`, `10KB` or `1.5GiB`.
    package static func bytes(_ text: String) -> Result<Int64, QuantityError> {
        if let plain = Int64(text), plain >= 0 { return .success(plain) }
        guard let (number, unit) = split(text) else { return .failure(.malformed) }
        guard let factor = sizeUnits[unit.lowercased()] else { return .failure(.unknownUnit(unit)) }
        let value = (number * factor).rounded()
        // Double(Int64.max) is 2^63, one past the largest Int64: `<`, or Int64(value) traps.
        guard value < Double(Int64.max) else { return .failure(.tooLarge) }
        return .success(Int64(value))
    }

    /// A rate such as `50MB/s` or `2MiB/s`, in bytes per second.
    package static func rate(_ text: String) -> Result<Int64, QuantityError> {
        let trimmed = Self.trimmed(text)
        guard trimmed.hasSuffix("/s") else { return .failure(.missingPerSecond) }
        return bytes(String(trimmed.dropLast(2)))
    }

    /// A duration such as `500ms`, `30s`, `5m`, `2h`, `1h30m` or `1 hour`, in seconds.
    package static func seconds(_ text: String) -> Result<Double, QuantityError> {
        var rest = Self.trimmed(text)
        guard !rest.isEmpty else { return .failure(.malformed) }
        var total = 0.0
        while !rest.isEmpty {
            let numberEnd = rest.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? rest.endIndex
            let digits = rest[..<numberEnd]
            let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty }), let number = Double(digits) else {
                return .failure(.malformed)
            }
            rest = Self.trimmed(rest[numberEnd...])
            let unitEnd = rest.firstIndex { !$0.isLetter } ?? rest.endIndex
            let unit = String(rest[..<unitEnd])
            guard !unit.isEmpty else { return .failure(.missingUnit) }
            // Symbols are case-sensitive (`M` could be months); words are not (`Hours`).
            guard let factor = durationUnits[unit] ?? (unit.count > 3 ? durationUnits[unit.lowercased()] : nil) else {
                return .failure(.unknownUnit(unit))
            }
            total += number * factor
            guard total.isFinite else { return .failure(.tooLarge) }
            rest = Self.trimmed(rest[unitEnd...])
        }
        return .success(total)
    }

    /// Drops leading and trailing spaces and tabs (Foundation's trimming bridges through NSString).
    private static func trimmed<S: StringProtocol>(_ text: S) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let substring = Substring(text)
        guard let first = substring.firstIndex(where: { !isBlank($0) }),
              let last = substring.lastIndex(where: { !isBlank($0) }) else { return "" }
        return substring[first...last]
    }

    /// Splits `1.5 GiB` into `1.5` and `GiB`.
    private static func split(_ text: String) -> (Double, String)? {
        let trimmed = Self.trimmed(text)
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        let digits = trimmed[..<numberEnd]
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty }),
              let number = Double(digits), number.isFinite else { return nil }
        let unit = String(Self.trimmed(trimmed[numberEnd...]))
        return (number, unit)
    }
}

/// Why a quantity did not parse; the decoder turns it into a message naming the key.
package enum QuantityError: Error, Equatable {
    case malformed
    case unknownUnit(String)
    case missingUnit
    case missingPerSecond
    case tooLarge
}
