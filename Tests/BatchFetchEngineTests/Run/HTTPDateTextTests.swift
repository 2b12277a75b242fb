@testable import BatchFetchEngine
import Foundation
import Testing
import TestOrigin

/// `Last-Modified` values as the state cache holds them: an IMF-fixdate as its seconds, any other
/// text as itself, and always the same text back.
@Suite struct HTTPDateTextTests {
    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Int64(784_111_777)),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
        ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
    ])
    func anIMFFixdateIsHeldAsItsSeconds(text: String, seconds: Int64) {
        #expect(HTTPDateText(text) == .seconds(seconds))
        #expect(HTTPDateText(text).text == text)
    }

    @Test(arguments: [
        "Mon, 06 Nov 1994 08:49:37 GMT",   // the wrong weekday
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",        // asctime
        "Sun, 6 Nov 1994 08:49:37 GMT",    // one-digit day
        "Sun, 06 nov 1994 08:49:37 GMT",   // lowercase month
        "Wed, 31 Feb 2024 08:49:37 GMT",   // no such day
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun, 06 Nov 1994 08:4a:37 GMT",
        "",
    ])
    func anyOtherTextIsKeptAsItIs(text: String) {
        #expect(HTTPDateText(text) == .text(text))
        #expect(HTTPDateText(text).text == text)
    }

    /// Formatting agrees with Foundation's formatter from 1601 to 9999 (ICU's Gregorian calendar
    /// turns Julian before 1582), and every date it writes is held as seconds.
    @Test func formattingAgreesWithFoundation() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SeededGenerator(seed: 2)
        let from1601 = HTTPDateText.seconds(ofFixdate: "Mon, 01 Jan 1601 00:00:00 GMT")!
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: from1601...253_402_300_799, using: &generator)
            let text = HTTPDateText.fixdate(seconds)
            #expect(text == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))), "\(seconds)")
            #expect(HTTPDateText(text) == .seconds(seconds))
        }
    }
}
