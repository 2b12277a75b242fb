@testable import BatchFetchEngine
@testable import BatchFetchNetwork
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
