@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import NIOConcurrencyHelpers
import TestOrigin
import Testing

/// `requests_per_second`: at most N starts to a host in any one-second window, as a pure rule
/// and as the host limiter waits on it (time advanced by hand).
@Suite struct StartWindowTests {
    static let zero = ContinuousClock.now

    @Test func aBurstOfTheLimitStartsThenTheNextWaitsForTheOldestToAge() {
        var window = StartWindow()
        #expect(window.admit(at: Self.zero, limit: 2) == nil)
        #expect(window.admit(at: Self.zero + .milliseconds(100), limit: 2) == nil)
        #expect(window.admit(at: Self.zero + .milliseconds(200), limit: 2) == .milliseconds(800))
        // A second after the first start there is room again; not a moment before.
        #expect(window.admit(at: Self.zero + .milliseconds(999), limit: 2) == .milliseconds(1))
        #expect(window.admit(at: Self.zero + .seconds(1), limit: 2) == nil)
        #expect(window.admit(at: Self.zero + .seconds(1), limit: 2) == .milliseconds(100))
    }

    /// Jobs to one host share the window; each start is checked against its own job's limit.
    @Test func aStricterJobWaitsForStartsOfAnother() {
        var window = StartWindow()
        #expect(window.admit(at: Self.zero, limit: 5) == nil)
        #expect(window.admit(at: Self.zero, limit: 5) == nil)
        #expect(window.admit(at: Self.zero + .milliseconds(10), limit: 1) == .milliseconds(990))
        #expect(window.admit(at: Self.zero + .milliseconds(10), limit: 3) == nil)
    }

    /// The limiter: with `requests_per_second: 2`, the third request to a host starts only once
    /// a second has passed since the first; another host is not held back.
    @Test func theHostLimiterWaitsOutTheWindow() async {
        let clock = ManualClock()
        let hosts = HostLimiter(limit: 8, time: clock)
        await hosts.acquire("a", requestsPerSecond: 2)
        await hosts.acquire("a", requestsPerSecond: 2)
        let started = NIOLockedValueBox(false)
        let third = Task {
            await hosts.acquire("a", requestsPerSecond: 2)
            started.withLockedValue { $0 = true }
        }
        await hosts.acquire("b", requestsPerSecond: 2)
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .milliseconds(999))
        #expect(!started.withLockedValue { $0 })
        clock.advance(by: .milliseconds(1))
        await third.value
        #expect(started.withLockedValue { $0 })
        #expect(hosts.inUse("a") == 3 && hosts.inUse("b") == 1)
    }
}
