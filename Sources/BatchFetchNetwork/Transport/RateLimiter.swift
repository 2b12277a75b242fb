import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// The run's overall `rate_limit`, shared by all jobs.
///
/// URLSession cannot be slowed down while it receives, so the limit is kept by pacing requests:
/// with a rate limit every download is fetched in bounded ranges of ``chunkSize(cap:)`` bytes,
/// and each range waits here for its share of time first. The timetable is the pure
/// ``RateSchedule``; this actor only sleeps until the time it gives.
package actor RateLimiter {
    package nonisolated let bytesPerSecond: Int64
    private var schedule: RateSchedule

    package init(bytesPerSecond: Int64) {
        schedule = RateSchedule(bytesPerSecond: bytesPerSecond)
        self.bytesPerSecond = schedule.bytesPerSecond
    }

    /// A quarter of a second's worth, between 64 KiB and the memory cap.
    package nonisolated func chunkSize(cap: Int64) -> Int64 {
        min(cap, max(64 << 10, bytesPerSecond / 4))
    }

    /// Waits until `bytes` more may be transferred.
    package func take(_ bytes: Int64) async {
        let now = ContinuousClock.now
        let start = schedule.take(bytes, now: now)
        if start > now { try? await Task.sleep(until: start, clock: .continuous) }
    }

    /// Accounts for bytes that arrived without being asked for through ``take(_:)``.
    package func charge(_ bytes: Int64) {
        schedule.charge(bytes, now: .now)
    }
}

/// When each transfer may start under a rate limit. Over a run, `n` bytes take at least
/// `n / rate` seconds minus one chunk (the first one goes at once). A server that ignores ranges
/// sends a whole file unpaced; the time it took is still charged, so later requests wait longer.
package struct RateSchedule: Sendable {
    package let bytesPerSecond: Int64
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
