import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// The run's download rate limit — `rate_limit`, and `bandwidth`/`--bwlimit`'s timetable —
/// shared by all jobs.
///
/// URLSession cannot be slowed down while it receives, so the limit is kept by pacing requests:
/// with a rate limit every download is fetched in bounded ranges of ``chunkSize(cap:)`` bytes,
/// and each range waits here for its share of time first. The limit in force is asked of
/// ``RunRateLimit`` for every range, at the wall-clock time `date` gives, so a run that crosses a
/// timetable's boundary changes speed there; an `off` spell lets ranges go unpaced. The pacing
/// is the pure ``RateSchedule``; this actor only sleeps on `time` until the moment it gives
/// (tests pass a manual clock and a date they move with it).
package actor RateLimiter {
    /// The highest rate the limit can set: what a paced range is sized for.
    package nonisolated let bytesPerSecond: Int64
    private var schedule: RateSchedule
    private let limit: RunRateLimit
    private let time: any TimeSource
    private let date: @Sendable () -> Date

    package init(bytesPerSecond: Int64) {
        self.init(limit: RunRateLimit(fixed: bytesPerSecond))!
    }

    /// A limiter for `limit`; nil when the limit never sets a rate.
    package init?(limit: RunRateLimit, time: any TimeSource = SystemTime(), date: @escaping @Sendable () -> Date = { Date() }) {
        guard let highest = limit.highest else { return nil }
        schedule = RateSchedule(bytesPerSecond: highest)
        bytesPerSecond = schedule.bytesPerSecond
        self.limit = limit
        self.time = time
        self.date = date
    }

    /// A quarter of a second's worth at the highest rate, between 64 KiB and the memory cap.
    package nonisolated func chunkSize(cap: Int64) -> Int64 {
        min(cap, max(64 << 10, bytesPerSecond / 4))
    }

    /// Waits until `bytes` more may be transferred at the rate in force now.
    package func take(_ bytes: Int64) async {
        let now = time.now
        guard let rate = limit.rate(at: date()) else { return }
        schedule.bytesPerSecond = rate
        let start = schedule.take(bytes, now: now)
        if start > now { await time.sleep(for: start - now) }
    }

    /// Accounts for bytes that arrived without being asked for through ``take(_:)``.
    package func charge(_ bytes: Int64) {
        guard let rate = limit.rate(at: date()) else { return }
        schedule.bytesPerSecond = rate
        schedule.charge(bytes, now: time.now)
    }
}

/// When each transfer may start under a rate limit. Over a run, `n` bytes take at least
/// `n / rate` seconds minus one chunk (the first one goes at once). A server that ignores ranges
/// sends a whole file unpaced; the time it took is still charged, so later requests wait longer.
package struct RateSchedule: Sendable {
    /// The rate in force; the limiter sets it before each take (a timetable changes it).
    package var bytesPerSecond: Int64 {
        didSet { bytesPerSecond = max(1, bytesPerSecond) }
    }
    /// When the bandwidth is free again.
    private var nextFree: ContinuousClock.Instant?

    package init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
    }

    /// When `bytes` asked for at `now` may start; the bandwidth is theirs until they are done.
    package mutating func take(_ bytes: Int64, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let start = max(now, nextFree ?? now)
        nextFree = start + duration(of: bytes)
        return start
    }

    /// Bytes that came unasked: the bandwidth is busy for their time from now or from when it
    /// frees up.
    package mutating func charge(_ bytes: Int64, now: ContinuousClock.Instant) {
        nextFree = max(nextFree ?? now, now) + duration(of: bytes)
    }

    private func duration(of bytes: Int64) -> Duration {
        .nanoseconds(Int64(Double(bytes) / Double(bytesPerSecond) * 1e9))
    }
}
