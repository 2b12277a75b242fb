/// A `Last-Modified` value as the state cache holds it: the instant of an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, what RFC 9110 tells servers to send) in eight bytes, or
/// the text itself when it is in any other form.
///
/// Why: the 29 characters of an IMF-fixdate are too long for a `String` to hold inline, so
/// each cached file carried a 64-byte allocation for it (1.3 MiB of a 20,000-file run). A date
/// is kept as seconds only when formatting them gives back the very same text, so the cache
/// file and conditional requests always see the bytes the server sent.
enum HTTPDateText: Equatable {
    case seconds(Int64)
    case text(String)

    init(_ text: String) {
        if let seconds = Self.seconds(ofFixdate: text), Self.fixdate(seconds) == text {
            self = .seconds(seconds)
        } else {
            self = .text(text)
        }
    }

    var text: String {
        switch self {
        case .seconds(let seconds): return Self.fixdate(seconds)
        case .text(let text): return text
        }
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The seconds since 1970 of `Www, DD Mmm YYYY hh:mm:ss GMT` (the weekday unchecked: the
    /// round trip in ``init(_:)`` checks it); nil for any other shape.
    static func seconds(ofFixdate text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), String(decoding: bytes[25...], as: UTF8.self) == " GMT" else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let month = months.firstIndex(of: String(decoding: bytes[8..<11], as: UTF8.self)),
              let day = number(5..<7), let year = number(12..<16),
              let hour = number(17..<19), let minute = number(20..<22), let second = number(23..<25),
              day >= 1, day <= 31, hour < 24, minute < 60, second < 60 else { return nil }
        return daysFromCivil(year: year, month: Int64(month + 1), day: day) * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// `seconds` since 1970 as an IMF-fixdate.
    static func fixdate(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - "\(year)".count)) + "\(year)"
        return "\(weekdays[weekday]), \(two(day)) \(months[Int(month) - 1]) \(yearText) "
            + "\(two(time / 3_600)):\(two(time % 3_600 / 60)):\(two(time % 60)) GMT"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
