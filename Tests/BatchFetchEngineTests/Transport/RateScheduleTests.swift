@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers
import Testing

/// The rate limit's timetable, on a clock the test holds.
@Suite struct RateScheduleTests {
    static let zero = ContinuousClock.now

    @Test func chunksAskedTogetherStartOneShareOfTimeApart() {
        // 3 MB at 2 MB/s in 500 kB chunks: the first at once, the sixth 1.25 s later.
        var schedule = RateSchedule(bytesPerSecond: 2_000_000)
        let starts = (0..<6).map { _ in schedule.take(500_000, now: Self.zero) - Self.zero }
        #expect(starts == (0..<6).map { Duration.milliseconds(250 * $0) })
    }

    @Test func theLimitIsSharedByEveryoneWhoAsks() {
        var schedule = RateSchedule(bytesPerSecond: 1_000)
        #expect(schedule.take(500, now: Self.zero) == Self.zero)
        // Another job asking at the same moment waits for the first one's share.
        #expect(schedule.take(500, now: Self.zero) - Self.zero == .milliseconds(500))
        // Idle bandwidth is not saved up: after a pause the next chunk starts when asked.
        let later = Self.zero + .seconds(10)
        #expect(schedule.take(500, now: later) == later)
    }

    @Test func bytesThatCameUnaskedDelayWhatFollows() {
        var schedule = RateSchedule(bytesPerSecond: 1_000)
        // A server ignored the range and sent 3,000 bytes at once.
        schedule.charge(3_000, now: Self.zero)
        #expect(schedule.take(100, now: Self.zero + .seconds(1)) - Self.zero == .seconds(3))
    }
}

/// The run's limiter on a manual clock and a wall-clock date the test moves with it: a run that
/// crosses a timetable's boundary changes speed there, and an `off` spell is not paced.
@Suite struct RateLimiterTimetableTests {
    /// The wall clock the limiter reads, moved by the test.
    final class Wall: Sendable {
        private let box: NIOLockedValueBox<Date>
        init(_ date: Date) { box = NIOLockedValueBox(date) }
        var date: Date { box.withLockedValue { $0 } }
        func move(by seconds: TimeInterval) { box.withLockedValue { $0 += seconds } }
    }

    @Test func theRateChangesWhenTheClockCrossesABoundary() async throws {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let wall = Wall(utc.date(from: DateComponents(year: 2026, month: 11, day: 30, hour: 11, minute: 59, second: 58))!)
        let clock = ManualClock()
        let limit = RunRateLimit(timetable: try BandwidthTimetable(parsing: "00:00,1000B 12:00,4000B 20:00,off"),
                                 timeZone: TimeZone(identifier: "UTC")!)
        let read: @Sendable () -> Date = { wall.date }
        let made = RateLimiter(limit: limit, time: clock, date: read)
        let limiter = try #require(made)
        #expect(limiter.bytesPerSecond == 4000)
        await limiter.take(1000)  // at 1,000 B/s: the bandwidth is busy for a second
        let second = Task { await limiter.take(1000) }
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .seconds(1))
        await second.value
        // Past noon: 4,000 bytes take a second, not four.
        clock.advance(by: .seconds(1))
        wall.move(by: 2)
        await limiter.take(4000)
        let third = Task { await limiter.take(4000) }
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleepers == 1)
        clock.advance(by: .milliseconds(1))
        await third.value
        // At night the limit is off: nothing waits.
        wall.move(by: 9 * 3600)
        for _ in 0..<5 { await limiter.take(1 << 20) }
        #expect(clock.sleepers == 0)
    }
}
