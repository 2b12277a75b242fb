@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchState
import Foundation
import Testing

/// HTTP dates kept as times: every IMF-fixdate reads back as the same text, anything else is
/// not taken for one.
@Suite struct IMFFixdateTests {
    /// Against Foundation's formatter, over every kind of year (leap, century, 400), both sides
    /// of the epoch.
    @Test func itFormatsAsFoundationDoesAndReadsItsOwnTextBack() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        let seconds: [Int64] = [0, -1, 86_399, 86_400, 951_782_400, 951_868_799, 4_107_542_400, 1_795_660_796, -2_208_988_800]
            + (0..<500).map { _ in Int64.random(in: -2_000_000_000...32_503_680_000, using: &generator) }
        for value in seconds {
            let text = IMFFixdate.format(value)
            #expect(text == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(value))), "\(value)")
            #expect(IMFFixdate.parse(text) == value, "\(text)")
        }
    }

    @Test(arguments: [
        "Wed, 26 Nov 2026 04:06:36 GMT",  // the wrong day name
        "Mon, 30 Feb 2026 10:00:00 GMT",  // no such date
        "Thu, 26 Nov 2026 24:00:00 GMT",
        "thu, 26 Nov 2026 04:06:36 GMT",
        "Thu, 26 Nov 2026 04:06:36 UTC",
        "Thu,  26 Nov 2026 04:06:36 GMT",
        "Thursday, 26-Nov-26 04:06:36 GMT",  // RFC 850
        "Thu Nov 26 04:06:36 2026",  // asctime
        "Thu, 26 Nov 2026 04:06:3x GMT",
        "",
    ])
    func anythingElseIsNotADate(_ text: String) {
        #expect(IMFFixdate.parse(text) == nil)
    }
}
