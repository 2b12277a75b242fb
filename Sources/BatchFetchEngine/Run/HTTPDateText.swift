/// A `Last-Modified` value as the state cache holds it: the instant of an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, what RFC 9110 tells servers to send) in eight bytes, or
/// the text itself when it is in any other form.
///
/// Why: the 29 characters of an IMF-fixdate are too long for a `String` to hold inline, so
/// each cached file carried a 64-byte allocation for it (bench/results/history.md). A date
/// is kept as seconds only when formatting them gives back the very same text, so the cache
/// file and conditional requests always see the bytes the server sent.
enum HTTPDateText: Equatable {
    case seconds(Int64)
    case text(String)

    init(_ text: String) {
        if let seconds = Self.seconds(ofFixdate: text), Self.fixdate(seconds, is: text) {
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
        var text = text
        return text.withUTF8(seconds(ofFixdate:))
    }

    private static func seconds(ofFixdate bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == length, bytes[3] == UInt8(ascii: ","), bytes[25...].elementsEqual(" GMT".utf8) else { return nil }
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
        return UTCTime(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second).secondsSince1970
    }

    /// The length of an IMF-fixdate.
    private static let length = 29

    /// `seconds` since 1970 as an IMF-fixdate.
    static func fixdate(_ seconds: Int64) -> String {
        String(unsafeUninitializedCapacity: length) { write(seconds, into: $0) }
    }

    /// Whether `text` is the IMF-fixdate of `seconds`, compared byte for byte with one made on the
    /// stack: a string made for the check was four of a small file's allocations.
    private static func fixdate(_ seconds: Int64, is text: String) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            text.utf8.elementsEqual(buffer[..<write(seconds, into: buffer)])
        }
    }

    /// Writes the IMF-fixdate of `seconds` into `buffer` (room for ``length`` bytes) and returns
    /// its length: nothing for a year outside 0 through 9999, which no parsed fixdate has.
    private static func write(_ seconds: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let time = UTCTime(secondsSince1970: seconds)
        guard (0...9999).contains(time.year) else { return 0 }
        var count = 0
        func text(_ text: String) {
            for byte in text.utf8 {
                buffer[count] = byte
                count += 1
            }
        }
        func digits(_ value: Int64, _ width: Int) {
            var value = value
            for position in stride(from: count + width - 1, through: count, by: -1) {
                buffer[position] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            count += width
        }
        text(weekdays[time.weekday])
        text(", ")
        digits(time.day, 2)
        text(" ")
        text(months[Int(time.month) - 1])
        text(" ")
        digits(time.year, 4)
        text(" ")
        digits(time.hour, 2)
        text(":")
        digits(time.minute, 2)
        text(":")
        digits(time.second, 2)
        text(" GMT")
        return count
    }
}
