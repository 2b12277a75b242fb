@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import NIOConcurrencyHelpers
import Testing

/// A host's quota as its answers state it: spend what is left, then wait for the reset; as a pure
/// rule and as the host limiter waits on it (time advanced by hand).
@Suite struct ServerPaceTests {
    static let zero = ContinuousClock.now

    @Test func whatIsLeftMayStartThenStartsWaitForTheReset() {
        var pace = ServerPace()
        #expect(pace.wait(at: Self.zero) == nil)  // nothing known: no wait
        // Two left, and this request was the only one in flight.
        pace.observe(RateLimitHint(remaining: 2, reset: 3), inFlight: 1, at: Self.zero)
        for _ in 0..<2 {
            #expect(pace.wait(at: Self.zero) == nil)
            pace.start(at: Self.zero)
        }
        #expect(pace.wait(at: Self.zero + .seconds(1)) == .seconds(2))
        #expect(pace.wait(at: Self.zero + .seconds(3)) == nil)
        pace.start(at: Self.zero + .seconds(3))
        #expect(pace == ServerPace())  // past the reset the quota is unknown again
    }

    /// Requests already on their way may not be counted by the server yet: they count against
    /// what is left.
    @Test func requestsInFlightCountAgainstWhatIsLeft() {
        var pace = ServerPace()
        pace.observe(RateLimitHint(remaining: 3, reset: 1), inFlight: 3, at: Self.zero)
        #expect(pace.wait(at: Self.zero) == nil)
        pace.start(at: Self.zero)
        #expect(pace.wait(at: Self.zero) == .seconds(1))
        // Within the window the later of the two resets stands.
        pace.observe(RateLimitHint(remaining: 0, reset: 0.25), inFlight: 1, at: Self.zero)
        #expect(pace.wait(at: Self.zero) == .seconds(1))
    }

    /// The limiter holds the next start to the host until the reset, lets another host go, and
    /// does not wait for a reset further away than the request's longest wait.
    @Test func theHostLimiterWaitsForTheQuotaToReset() async {
        let clock = ManualClock()
        let hosts = HostLimiter(limit: 8, time: clock)
        await hosts.acquire("a", requestsPerSecond: nil)
        hosts.observe(RateLimitHint(remaining: 0, reset: 2), from: "a")
        let started = NIOLockedValueBox(false)
        let next = Task {
            await hosts.acquire("a", requestsPerSecond: nil)
            started.withLockedValue { $0 = true }
        }
        await hosts.acquire("b", requestsPerSecond: nil)
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .milliseconds(1999))
        #expect(!started.withLockedValue { $0 })
        clock.advance(by: .milliseconds(1))
        await next.value
        #expect(started.withLockedValue { $0 })

        hosts.observe(RateLimitHint(remaining: 0, reset: 3600), from: "a")
        await hosts.acquire("a", requestsPerSecond: nil, longestWait: 300)  // starts at once: the 429 is the retry policy's
        #expect(hosts.inUse("a") == 3)
    }
}

extension ServerPaceTests {
    /// An older answer arriving after a newer one does not raise the budget of the same window;
    /// an answer of a later window replaces it.
    @Test func withinAWindowTheSmallerBudgetStands() {
        var pace = ServerPace()
        pace.observe(RateLimitHint(remaining: 1, reset: 1), inFlight: 1, at: Self.zero)
        pace.observe(RateLimitHint(remaining: 3, reset: 1), inFlight: 1, at: Self.zero + .milliseconds(10))
        #expect(pace.budget == 1)
        pace.observe(RateLimitHint(remaining: 4, reset: 5), inFlight: 1, at: Self.zero + .milliseconds(20))
        #expect(pace.budget == 4)
    }
}
