@testable import BatchFetchSpec
import Foundation
import Testing

/// `bandwidth:` / `--bwlimit` in rclone's syntax: what each form means and the limit in force at
/// a given moment, with fixed dates and a fixed time zone (no clock).
@Suite struct BandwidthTimetableTests {
    static let zone = TimeZone(identifier: "Europe/Berlin")!

    /// 2026-11-30 is a Monday.
    static func date(_ day: Int, _ hour: Int, _ minute: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: 2026, month: 11, day: 30 + day, hour: hour, minute: minute))!
    }

    @Test func aSingleRateHoldsAlways() throws {
        let table = try BandwidthTimetable(parsing: "10Mi")
        #expect(table.rate(at: Self.date(0, 3, 0), in: Self.zone) == 10 << 20)
        #expect(try BandwidthTimetable(parsing: "512").rate(atMinuteOfWeek: 0) == 512 << 10)  // a bare number is KiB/s, as in rclone
        #expect(try BandwidthTimetable(parsing: "2M").rate(atMinuteOfWeek: 0) == 2 << 20)
        #expect(try BandwidthTimetable(parsing: "1.5MiB/s").rate(atMinuteOfWeek: 0) == 3 << 19)
        #expect(try BandwidthTimetable(parsing: "100B").rate(atMinuteOfWeek: 0) == 100)
        #expect(try BandwidthTimetable(parsing: "10M:2M").rate(atMinuteOfWeek: 0) == 2 << 20)  // UP:DOWN: the download half
        #expect(try BandwidthTimetable(parsing: "off").rate(atMinuteOfWeek: 0) == nil)
    }

    /// Each entry holds until the next; before the day's first, the day before's last holds.
    @Test func aDailyTimetableChangesAtItsTimesInLocalTime() throws {
        let table = try BandwidthTimetable(parsing: "08:00,512Ki 19:00,10Mi 23:00,off")
        #expect(table.rate(at: Self.date(0, 7, 59), in: Self.zone) == nil)
        #expect(table.rate(at: Self.date(0, 8, 0), in: Self.zone) == 512 << 10)
        #expect(table.rate(at: Self.date(2, 18, 59), in: Self.zone) == 512 << 10)
        #expect(table.rate(at: Self.date(2, 19, 0), in: Self.zone) == 10 << 20)
        #expect(table.rate(at: Self.date(6, 23, 30), in: Self.zone) == nil)
        // The same instant in another zone is another hour of the day.
        #expect(table.rate(at: Self.date(0, 8, 30), in: TimeZone(identifier: "UTC")!) == nil)
        #expect(table.highestRate == 10 << 20)
    }

    /// Days: an entry holds to the next one in the week; the week's last wraps to its start.
    @Test func aWeeklyTimetableWrapsAroundTheWeek() throws {
        let table = try BandwidthTimetable(parsing: "Mon-08:00,1Mi Sat-00:00,off")
        #expect(table.rate(at: Self.date(0, 7, 0), in: Self.zone) == nil)  // Monday morning: still Saturday's off
        #expect(table.rate(at: Self.date(0, 8, 0), in: Self.zone) == 1 << 20)
        #expect(table.rate(at: Self.date(4, 23, 59), in: Self.zone) == 1 << 20)
        #expect(table.rate(at: Self.date(5, 0, 0), in: Self.zone) == nil)
    }

    @Test func aMalformedTimetableSaysWhichTokenAndWhy() {
        func message(_ text: String) -> String? {
            do { _ = try BandwidthTimetable(parsing: text); return nil } catch { return error.message }
        }
        #expect(message("") == "is empty")
        #expect(message("08:00,1M fast") == "'fast' is not TIME,RATE (as in 08:00,512Ki or Mon-08:00,off)")
        #expect(message("25:00,1M") == "'25:00,1M': '25:00' is not a time of day HH:MM")
        #expect(message("Mo-08:00,1M") == "'Mo-08:00,1M': 'Mo' is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)")
        #expect(message("08:00,1Q") == "'1Q' is not a rate such as 512Ki, 10M or off")
        #expect(message("08:00,1M 08:00,2M") == "two entries for Mon-08:00")
        #expect(message("0") == "'0' is not a rate such as 512Ki, 10M or off")
    }

    /// `rate_limit` and the timetable together: the lower limit in force wins.
    @Test func theLowerLimitInForceWins() throws {
        let limit = RunRateLimit(fixed: 1 << 20, timetable: try BandwidthTimetable(parsing: "08:00,512Ki 19:00,10Mi 23:00,off"),
                                 timeZone: Self.zone)
        #expect(limit.rate(at: Self.date(0, 9, 0)) == 512 << 10)
        #expect(limit.rate(at: Self.date(0, 20, 0)) == 1 << 20)
        #expect(limit.rate(at: Self.date(0, 23, 30)) == 1 << 20)
        #expect(limit.highest == 1 << 20)
        #expect(RunRateLimit(timetable: try BandwidthTimetable(parsing: "off")).isSet == false)
    }
}
