@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers
import TestOrigin
import Testing

/// `requests_per_second: N` with `burst: B`: starts spaced one every 1/N s, B at once after a
/// quiet spell, as a pure rule and as the host limiter waits on it (time advanced by hand).
@Suite struct StartPaceTests {
    static let zero = ContinuousClock.now

    /// Forty starts asked for as fast as the pace allows: the times it admits them.
    private func starts(_ count: Int, perSecond: Int, burst: Int) -> [Duration] {
        var pace = StartPace()
        var now = Self.zero
        var admitted: [Duration] = []
        while admitted.count < count {
            if let wait = pace.admit(at: now, perSecond: perSecond, burst: burst) { now += wait } else { admitted.append(now - Self.zero) }
        }
        return admitted
    }

    /// The defect this replaced: a sliding one-second window let ten start at once at N = 10,
    /// which nginx's `limit_req rate=10r/s` (burst 0) refuses. Now no two starts are closer than
    /// 100 ms, and no second holds more than ten.
    @Test func startsAreSpacedEvenlyNotBurstAtTheWindowsEdge() {
        let times = starts(40, perSecond: 10, burst: 1)
        #expect(times.first == .zero)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == .milliseconds(100) })
        let busiest = times.map { start in times.filter { $0 >= start && $0 < start + .seconds(1) }.count }.max()
        #expect(busiest == 10)
        #expect(times.last == .milliseconds(3_900))
    }

    @Test func aBurstGoesAtOnceThenTheRestAreSpaced() {
        let times = starts(6, perSecond: 4, burst: 3)
        #expect(times == [.zero, .zero, .zero, .milliseconds(250), .milliseconds(500), .milliseconds(750)])
        // After a quiet spell the burst is available again, and not more than it.
        var pace = StartPace()
        for _ in 0..<3 { #expect(pace.admit(at: Self.zero, perSecond: 4, burst: 3) == nil) }
        let later = Self.zero + .seconds(5)
        for _ in 0..<3 { #expect(pace.admit(at: later, perSecond: 4, burst: 3) == nil) }
        #expect(pace.admit(at: later, perSecond: 4, burst: 3) == .milliseconds(250))
    }

    /// A start that comes late (its task was slow to run) moves the pace with it: the next still
    /// waits a whole interval after it.
    @Test func aLateStartDelaysTheNextByAWholeInterval() {
        var pace = StartPace()
        #expect(pace.admit(at: Self.zero, perSecond: 10) == nil)
        #expect(pace.admit(at: Self.zero + .milliseconds(250), perSecond: 10) == nil)
        #expect(pace.admit(at: Self.zero + .milliseconds(300), perSecond: 10) == .milliseconds(50))
        #expect(pace.admit(at: Self.zero + .milliseconds(350), perSecond: 10) == nil)
    }

    /// Jobs to one host share the pace; each start is spaced by its own job's limit.
    @Test func aStricterJobWaitsLongerOnTheSharedPace() {
        var pace = StartPace()
        #expect(pace.admit(at: Self.zero, perSecond: 10) == nil)
        // The next theoretical start is 100 ms on; a job at one per second starts then too, and
        // moves the pace a whole second.
        #expect(pace.admit(at: Self.zero, perSecond: 1) == .milliseconds(100))
        #expect(pace.admit(at: Self.zero + .milliseconds(100), perSecond: 1) == nil)
        #expect(pace.admit(at: Self.zero + .milliseconds(200), perSecond: 10) == .milliseconds(900))
    }

    /// `burst` and `requests_per_second` from the manifest reach every request a job makes.
    @Test func theJobsPaceReachesItsRequests() throws {
        let manifest = try ManifestLoader(environment: [:]).load(
            bytes: Array("version: 1\ndefaults: {requests_per_second: 4, burst: 3}\njobs:\n  - {id: a, url: 'https://h/a'}\n  - {id: b, url: 'https://h/b', burst: 1}\n".utf8),
            displayPath: "m.yaml", baseDirectory: "/tmp")
        let requests = manifest.jobs.map { job in
            JobNetwork(job: job, transport: AsyncHTTPClientTransport.shared(maximumConnectionsPerHost: 4), perHost: 4, environment: [:])
                .request(URL(string: "https://h/")!, mirrorIndex: 0, method: "GET", timeout: 30)
        }
        #expect(requests.map(\.requestsPerSecond) == [4, 4])
        #expect(requests.map(\.requestBurst) == [3, 1])
    }

    /// The limiter: with `requests_per_second: 2`, the second request to a host starts only once
    /// half a second has passed since the first; another host is not held back.
    @Test func theHostLimiterWaitsForThePace() async {
        let clock = ManualClock()
        let hosts = HostLimiter(limit: 8, time: clock)
        await hosts.acquire("a", requestsPerSecond: 2)
        let started = NIOLockedValueBox(false)
        let second = Task {
            await hosts.acquire("a", requestsPerSecond: 2)
            started.withLockedValue { $0 = true }
        }
        await hosts.acquire("b", requestsPerSecond: 2)
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .milliseconds(499))
        #expect(!started.withLockedValue { $0 })
        clock.advance(by: .milliseconds(1))
        await second.value
        #expect(started.withLockedValue { $0 })
        #expect(hosts.inUse("a") == 2 && hosts.inUse("b") == 1)
    }
}
