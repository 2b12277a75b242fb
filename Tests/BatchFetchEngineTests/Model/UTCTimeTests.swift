@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchState
import Foundation
import TestOrigin
import Testing

/// UTC calendar fields and RFC 3339 timestamps without Foundation's calendars, checked against
/// Foundation's own formatting.
@Suite struct UTCTimeTests {
    @Test func fieldsAndSecondsConvertBothWays() {
        #expect(UTCTime(secondsSince1970: 0) == UTCTime(year: 1970, month: 1, day: 1))
        #expect(UTCTime(secondsSince1970: -1) == UTCTime(year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59))
        #expect(UTCTime(secondsSince1970: 951_825_600) == UTCTime(year: 2000, month: 2, day: 29, hour: 12))
        #expect(UTCTime(year: 2026, month: 11, day: 23, hour: 13, minute: 55, second: 35).secondsSince1970 == 1_795_442_135)
        #expect(UTCTime(secondsSince1970: 0).weekday == 4)
        #expect(UTCTime(secondsSince1970: -86_400 * 4).weekday == 0)
        #expect(UTCTime(secondsSince1970: -86_400 * 5).weekday == 6)
    }

    /// Whole seconds from 1601 to 9999 (ICU's Gregorian calendar turns Julian before 1582), and
    /// milliseconds that are exact in binary, as `Date.ISO8601FormatStyle` writes them.
    @Test func timestampsMatchFoundationsISO8601Style() {
        let plain = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var generator = SeededGenerator(seed: 3)
        let from1601 = UTCTime(year: 1601, month: 1, day: 1).secondsSince1970
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: from1601...253_402_300_799, using: &generator)
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(UTCTime.rfc3339(date) == date.formatted(plain), "\(seconds)")
            #expect(UTCTime(secondsSince1970: seconds).secondsSince1970 == seconds)
        }
        for fraction in [0.0, 0.5, 0.25, 0.125, 0.0625] {
            let date = Date(timeIntervalSince1970: 1_795_442_135 + fraction)
            #expect(UTCTime.rfc3339(date, milliseconds: true) == date.formatted(fractional))
        }
        #expect(UTCTime.rfc3339(Date(timeIntervalSince1970: 1_795_442_135.125), milliseconds: true) == "2026-11-23T13:55:35.125Z")
    }

    /// What ``UTCTime/rfc3339(_:milliseconds:)`` writes reads back to the same moment; anything
    /// else is refused rather than misread.
    @Test func timestampsReadBack() {
        var generator = SeededGenerator(seed: 4)
        for _ in 0..<1_000 {
            let seconds = Int64.random(in: 0...253_402_300_799, using: &generator)
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(UTCTime.secondsSince1970(rfc3339: UTCTime.rfc3339(date)) == Double(seconds))
        }
        #expect(UTCTime.secondsSince1970(rfc3339: "2026-11-23T13:55:35.125Z") == 1_795_442_135.125)
        for bad in ["", "2026-11-23T13:55:35", "2026-11-23 13:55:35Z", "2026-11-23T13:55:35+01:00", "2026-11-23T13:55:3xZ",
                    "2026-11-23T13:55:35.Z", "2026-11-23T13:55:35,5Z"] {
            #expect(UTCTime.secondsSince1970(rfc3339: bad) == nil, "\(bad)")
        }
    }
}
