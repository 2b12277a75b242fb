import BatchFetchFiles

/// HTTP's preferred date form, IMF-fixdate (RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), as
/// seconds since the epoch and back, by hand on the bytes, with ``UTCTime``'s calendar.
///
/// The state store keeps each file's `Last-Modified` as a time when it reads back to the same
/// text (a string's heap a row otherwise, at a million rows); Foundation's `DateFormatter` is
/// too slow for a rerun's load of a million rows (bench/results/profile.md, "Choices the code cites"). Text in any other form (the
/// obsolete RFC 850 and asctime forms, or a wrong day name) is kept as text by the caller.
package enum IMFFixdate {
    private static let days: StaticString = "SunMonTueWedThuFriSat"  // UTCTime.weekday's order
    private static let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"

    /// The time `text` names, if it is an IMF-fixdate that ``format(_:)`` spells back exactly
    /// (a real date, its own day name, two-digit fields).
    package static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { bytes -> Int64? in
            guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
                  bytes[16] == 0x20, bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20, bytes[26] == 0x47,
                  bytes[27] == 0x4D, bytes[28] == 0x54 else { return nil }
            func number(_ range: Range<Int>) -> Int64? {
                var value: Int64 = 0
                for index in range {
                    guard bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
                    value = value * 10 + Int64(bytes[index] - 0x30)
                }
                return value
            }
            func name(at offset: Int, in names: StaticString) -> Int? {
                (0..<names.utf8CodeUnitCount / 3).first { candidate in
                    (0..<3).allSatisfy { names.utf8Start[candidate * 3 + $0] == bytes[offset + $0] }
                }
            }
            guard let day = number(5..<7), let month = name(at: 8, in: months).map({ Int64($0) + 1 }),
                  let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
                  let second = number(23..<25), hour < 24, minute < 60, second < 60 else { return nil }
            let fields = UTCTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
            let seconds = fields.secondsSince1970
            // A day past the month's end carries over: not a date that was written.
            guard UTCTime(secondsSince1970: seconds) == fields, name(at: 0, in: days) == fields.weekday else { return nil }
            return seconds
        }
    }

    /// `seconds` since the epoch (years 0 to 9999) as an IMF-fixdate.
    package static func format(_ seconds: Int64) -> String {
        let time = UTCTime(secondsSince1970: seconds)
        return String(unsafeUninitializedCapacity: 29) { buffer in
            func put(_ names: StaticString, _ index: Int, at offset: Int) {
                for position in 0..<3 { buffer[offset + position] = names.utf8Start[index * 3 + position] }
            }
            func put(_ value: Int64, digits: Int, at offset: Int) {
                var value = value
                for position in (0..<digits).reversed() {
                    buffer[offset + position] = 0x30 + UInt8(value % 10)
                    value /= 10
                }
            }
            put(days, time.weekday, at: 0)
            buffer[3] = 0x2C
            buffer[4] = 0x20
            put(time.day, digits: 2, at: 5)
            buffer[7] = 0x20
            put(months, Int(time.month) - 1, at: 8)
            buffer[11] = 0x20
            put(time.year, digits: 4, at: 12)
            buffer[16] = 0x20
            put(time.hour, digits: 2, at: 17)
            buffer[19] = 0x3A
            put(time.minute, digits: 2, at: 20)
            buffer[22] = 0x3A
            put(time.second, digits: 2, at: 23)
            for (offset, byte) in " GMT".utf8.enumerated() { buffer[25 + offset] = byte }
            return 29
        }
    }
}
