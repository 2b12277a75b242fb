/// When the next request to one host may start under `requests_per_second: N` and `burst: B`:
/// starts are spaced evenly, one every 1/N s, with up to B at once after a quiet spell. A pure
/// value (`StartPaceTests`); ``HostLimiter`` keeps one per host and waits as it says.
///
/// This is the generic cell rate algorithm, the way nginx's `limit_req` and token buckets count:
/// the pace keeps a theoretical next start that moves 1/N s on with every start, and a start is
/// admitted once it is no more than B − 1 intervals early. A one-second sliding window (what this
/// was) let N start at once at each window's edge: at N = 10 the origin saw 13 requests within
/// one second, which `limit_req rate=10r/s` refuses with 503. A start that comes late moves the
/// theoretical one with it, so a delayed start never lets the next come sooner than 1/N s
/// after it. Jobs to one host share the pace, whatever their own limits: each start is spaced
/// by the limit of the job that asks.
package struct StartPace: Sendable, Equatable {
    /// The theoretical time of the next start; nil before the first.
    package private(set) var next: ContinuousClock.Instant?

    /// Admits a start at `now` (recorded) and returns nil, or returns how long to wait before
    /// asking again.
    package mutating func admit(at now: ContinuousClock.Instant, perSecond: Int, burst: Int = 1) -> Duration? {
        let interval = Duration.seconds(1) / max(1, perSecond)
        let due = max(next ?? now, now)
        let earliest = due - interval * (max(1, burst) - 1)
        guard now >= earliest else { return earliest - now }
        next = due + interval
        return nil
    }
}
