@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Testing

@Suite struct LaneShareTests {
    /// The lanes' shares of `per_host` add up to it, and differ by at most one: the clients
    /// together open no more connections than the manifest allows, and none is starved.
    @Test func sharesAddUpToPerHostAndDifferByAtMostOne() {
        let lanes = EventLoopTaskExecutor.all.count
        for perHost in 1...64 {
            let transport = AsyncHTTPClientTransport(maximumConnectionsPerHost: perHost, proxies: ProxySettings(environment: [:]))
            let shares = (0..<lanes).map(transport.laneShare)
            #expect(shares.reduce(0, +) == perHost, "per_host \(perHost): \(shares)")
            #expect(shares.max()! - shares.min()! <= 1)
        }
    }
}
