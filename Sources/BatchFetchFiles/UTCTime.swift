import Foundation

/// A moment as UTC calendar fields (proleptic Gregorian), computed without Foundation's
/// calendars, for the timestamps batchfetch writes and the HTTP dates it keeps.
///
/// Why: `Date.ISO8601FormatStyle` builds a Gregorian calendar in the current time zone, and the
/// time zone goes through ICU: the report's two timestamps touched ICU and the heap at the very
/// end of a run, where its memory peaks (bench/results/history.md). The conversions are Howard Hinnant's
/// days-from-civil algorithms.
package struct UTCTime: Equatable, Sendable {
    package var year: Int64
    /// 1 to 12.
    package var month: Int64
    package var day: Int64
    package var hour: Int64
    package var minute: Int64
    package var second: Int64

    package init(year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// The moment `seconds` after 1970-01-01T00:00:00Z.
    package init(secondsSince1970 seconds: Int64) {
        let days = Self.floorDivide(seconds, 86_400)
        let time = seconds - days * 86_400
        let z = days + 719_468
        let era = Self.floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        self.init(year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month,
                  day: dayOfYear - (153 * monthIndex + 2) / 5 + 1, hour: time / 3_600, minute: time % 3_600 / 60,
                  second: time % 60)
    }

    /// Seconds since 1970-01-01T00:00:00Z (fields out of their ranges carry over).
    package var secondsSince1970: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = Self.floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// 0 for Sunday to 6 for Saturday.
    package var weekday: Int {
        Int(((Self.floorDivide(secondsSince1970, 86_400) + 4) % 7 + 7) % 7)  // 1970-01-01 was a Thursday
    }

    /// RFC 3339 in UTC: `2026-11-23T15:34:00Z`, or with milliseconds (truncated),
    /// `2026-11-23T15:34:00.123Z`; as `Date.ISO8601FormatStyle` writes them.
    package static func rfc3339(_ date: Date, milliseconds: Bool = false) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1_000).rounded(.down))
        let time = UTCTime(secondsSince1970: floorDivide(totalMilliseconds, 1_000))
        let fraction = milliseconds ? "." + padded(totalMilliseconds - floorDivide(totalMilliseconds, 1_000) * 1_000, 3) : ""
        return "\(padded(time.year, 4))-\(padded(time.month, 2))-\(padded(time.day, 2))T"
            + "\(padded(time.hour, 2)):\(padded(time.minute, 2)):\(padded(time.second, 2))\(fraction)Z"
    }

    /// Seconds since the epoch of what ``rfc3339(_:milliseconds:)`` writes (UTC, `Z`, with or
    /// without a fraction); nil for anything else.
    package static func secondsSince1970(rfc3339 text: String) -> Double? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19) else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 21, let digits = number(20..<(bytes.count - 1)) else { return nil }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        let time = UTCTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return Double(time.secondsSince1970) + fraction
    }

    /// `value` in decimal with leading zeros to `width` digits.
    package static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : (value - divisor + 1) / divisor
    }
}
