/// Keeps the requests in flight to one host at or below `per_host`, across all jobs.
///
/// URLSession would queue extra tasks itself, but queued tasks plus redirects can trap in
/// FoundationNetworking 6.3.1 (Docs/Contracts.md §5), so the engine never hands it more than the limit.
public actor HostLimiter {
    private let limit: Int
    private var inUse: [String: Int] = [:]
    private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    public func acquire(_ host: String) async {
        if inUse[host, default: 0] < limit {
            inUse[host, default: 0] += 1
            return
        }
        await withCheckedContinuation { waiters[host, default: []].append($0) }
    }

    public func release(_ host: String) {
        if var queue = waiters[host], !queue.isEmpty {
            let next = queue.removeFirst()
            waiters[host] = queue
            next.resume()
        } else {
            inUse[host, default: 1] -= 1
        }
    }
}
