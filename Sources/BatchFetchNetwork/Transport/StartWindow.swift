/// When the next request to one host may start under `requests_per_second`: at most `limit`
/// starts in any one-second window. A pure value (`StartWindowTests`); ``HostLimiter`` keeps one
/// per host and waits as it says.
///
/// The window slides: a start is admitted when fewer than `limit` starts happened in the second
/// before it, so a burst of `limit` is allowed and the next waits until the oldest of them is a
/// second old. Jobs to one host share its window, whatever their own limits: each start is
/// checked against the limit of the job that asks.
package struct StartWindow: Sendable, Equatable {
    package static let span = Duration.seconds(1)

    /// Starts of the last second, oldest first.
    package private(set) var starts: [ContinuousClock.Instant] = []

    /// Admits a start at `now` (recorded) and returns nil, or returns how long to wait before
    /// asking again.
    package mutating func admit(at now: ContinuousClock.Instant, limit: Int) -> Duration? {
        starts.removeAll { now - $0 >= Self.span }
        guard starts.count >= max(1, limit) else {
            starts.append(now)
            return nil
        }
        // The start that leaves the window first and makes room for this one.
        return starts[starts.count - max(1, limit)] + Self.span - now
    }
}
