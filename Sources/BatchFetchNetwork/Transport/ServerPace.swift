/// When the next request to one host may start, given what the host's last answer said about
/// its quota (``RateLimitHint``). A pure value (`ServerPaceTests`); ``HostLimiter`` keeps one per
/// host beside its ``StartPace``.
///
/// Spend, then wait: after an answer that leaves `remaining` requests, that many more may start
/// (less the requests already on their way, which the server may not have counted yet); once
/// they have, starts wait for the reset. A quota is not spread thin over its window — a batch of
/// a hundred files under GitHub's 5,000 an hour should not take an hour — and no request is
/// started that the server said it would refuse. After the reset the quota is unknown again
/// until the next answer.
package struct ServerPace: Sendable, Equatable {
    /// Starts still allowed before ``resetAt``; nil: nothing known.
    package private(set) var budget: Int?
    package private(set) var resetAt: ContinuousClock.Instant?

    /// Takes in an answer that arrived at `now` while `inFlight` requests to the host (this one
    /// included) were on their way.
    ///
    /// Answers to requests in flight together may arrive out of order, and an older one says
    /// more is left than a newer one did: within one window (resets less than a second and a
    /// half apart, as whole-second resets of one window are) the smaller budget stands.
    package mutating func observe(_ hint: RateLimitHint, inFlight: Int, at now: ContinuousClock.Instant) {
        let newBudget = max(0, hint.remaining - max(0, inFlight - 1))
        let newReset = now + .milliseconds(Int64((hint.reset * 1000).rounded(.up)))
        if let budget, let resetAt, now < resetAt, newReset < resetAt + .milliseconds(1500) {
            self.budget = min(budget, newBudget)
            self.resetAt = max(resetAt, newReset)
        } else {
            budget = newBudget
            resetAt = newReset
        }
    }

    /// How long a start at `now` must wait for the reset; nil: it may start.
    package func wait(at now: ContinuousClock.Instant) -> Duration? {
        guard let resetAt, let budget, now < resetAt, budget == 0 else { return nil }
        return resetAt - now
    }

    /// Counts a start at `now` (one that ``wait(at:)`` allowed); past the reset, the quota is
    /// unknown again.
    package mutating func start(at now: ContinuousClock.Instant) {
        guard let resetAt, let budget else { return }
        if now >= resetAt {
            self = ServerPace()
        } else {
            self.budget = max(0, budget - 1)
        }
    }

    /// Forgets the quota (a reset too far away to wait for).
    package mutating func forget() {
        self = ServerPace()
    }
}
