/// HTTP's preferred date form, IMF-fixdate (RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), as
/// seconds since the epoch and back, by hand on the bytes.
///
/// The state store keeps each file's `Last-Modified` as a time when it reads back to the same
/// text (29 bytes of heap a row otherwise, at a million rows); Foundation's `DateFormatter` took
/// about 10 µs a value, a rerun's load of a million rows 10 s. Text in any other form (the
/// obsolete RFC 850 and asctime forms, or a wrong day name) is kept as text by the caller.
enum IMFFixdate {
    private static let days: StaticString = "ThuFriSatSunMonTueWed"  // 1970-01-01 was a Thursday
    private static let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"

    /// The time `text` names, if it is an IMF-fixdate that ``format(_:)`` spells back exactly
    /// (a real date, its own day name, two-digit fields).
    static func parse(_ text: String) -> Int64? {
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
            let date = daysFromCivil(year: year, month: month, day: day)
            guard civil(fromDays: date) == (year, month, day), name(at: 0, in: days) == weekday(date) else { return nil }
            return date * 86_400 + hour * 3_600 + minute * 60 + second
        }
    }

    /// `seconds` since the epoch (years 0 to 9999) as an IMF-fixdate.
    static func format(_ seconds: Int64) -> String {
        let date = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - date * 86_400
        let (year, month, day) = civil(fromDays: date)
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
            put(days, weekday(date), at: 0)
            buffer[3] = 0x2C
            buffer[4] = 0x20
            put(day, digits: 2, at: 5)
            buffer[7] = 0x20
            put(months, Int(month) - 1, at: 8)
            buffer[11] = 0x20
            put(year, digits: 4, at: 12)
            buffer[16] = 0x20
            put(time / 3_600, digits: 2, at: 17)
            buffer[19] = 0x3A
            put(time / 60 % 60, digits: 2, at: 20)
            buffer[22] = 0x3A
            put(time % 60, digits: 2, at: 23)
            for (offset, byte) in " GMT".utf8.enumerated() { buffer[25 + offset] = byte }
            return 29
        }
    }

    /// The day of the week of a day since 1970-01-01, as an index into ``days``.
    private static func weekday(_ date: Int64) -> Int {
        Int(((date % 7) + 7) % 7)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day since 1970-01-01 (Hinnant's `civil_from_days`).
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
