import Foundation

/// The run's overall `rate_limit`, shared by all jobs.
///
/// URLSession cannot be slowed down while it receives, so the limit is kept by pacing requests:
/// with a rate limit every download is fetched in bounded ranges of ``chunkSize(cap:)`` bytes,
/// and each range waits here for its share of time first. Over a run, `n` bytes take at least
/// `n / rate` seconds minus one chunk (the first one goes at once). A server that ignores ranges
/// sends a whole file unpaced; the time it took is still charged, so later requests wait longer.
public actor RateLimiter {
    public let bytesPerSecond: Int64
    private var nextFree = ContinuousClock.now

    public init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
    }

    /// A quarter of a second's worth, between 64 KiB and the memory cap.
    public nonisolated func chunkSize(cap: Int64) -> Int64 {
        min(cap, max(64 << 10, bytesPerSecond / 4))
    }

    /// Waits until `bytes` more may be transferred.
    public func take(_ bytes: Int64) async {
        let now = ContinuousClock.now
        let start = max(now, nextFree)
        nextFree = start + .nanoseconds(Int64(Double(bytes) / Double(bytesPerSecond) * 1e9))
        if start > now { try? await Task.sleep(until: start, clock: .continuous) }
    }

    /// Accounts for bytes that arrived without being asked for through ``take(_:)``.
    public func charge(_ bytes: Int64) {
        nextFree = max(nextFree, .now) + .nanoseconds(Int64(Double(bytes) / Double(bytesPerSecond) * 1e9))
    }
}
