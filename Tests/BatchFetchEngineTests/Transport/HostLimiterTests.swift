@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

@Suite struct HostLimiterTests {
    /// Records the order in which waiters got their slot.
    private final class Order: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int] = []
        func append(_ value: Int) { lock.withLock { values.append(value) } }
        var all: [Int] { lock.withLock { values } }
    }

    @Test func takesFreeSlotsAndCountsEachHostApart() async {
        let hosts = HostLimiter(limit: 2)
        await hosts.acquire("a")
        await hosts.acquire("a")
        await hosts.acquire("b")
        #expect(hosts.inUse("a") == 2 && hosts.inUse("b") == 1)
        hosts.release("a")
        hosts.release("b")
        #expect(hosts.inUse("a") == 1 && hosts.inUse("b") == 0)
    }

    @Test func aWaiterGetsTheReleasedSlotInArrivalOrder() async {
        let hosts = HostLimiter(limit: 1)
        await hosts.acquire("a")
        let order = Order()
        var waiters: [Task<Void, Never>] = []
        for index in 0..<3 {
            waiters.append(Task {
                await hosts.acquire("a")
                order.append(index)
            })
            // The next waiter queues only after this one did.
            while hosts.waiting("a") < index + 1 { await Task.yield() }
        }
        #expect(order.all.isEmpty)
        for expected in 1...3 {
            hosts.release("a")
            while order.all.count < expected { await Task.yield() }
            #expect(hosts.inUse("a") == 1)
        }
        for waiter in waiters { await waiter.value }
        #expect(order.all == [0, 1, 2])
        hosts.release("a")
        #expect(hosts.inUse("a") == 0 && hosts.waiting("a") == 0)
    }
}
