import BatchFetchFiles
import BatchFetchObjectStore
import NIOConcurrencyHelpers

/// Keeps the requests in flight to one host at or below `per_host`, across all jobs, and paces
/// their starts when a job asks for it (`requests_per_second`, ``StartPace``) and when the
/// host's answers say its quota is spent (rate-limit headers, ``ServerPace``).
///
/// URLSession would queue extra tasks itself, but queued tasks plus redirects can trap in
/// FoundationNetworking 6.3.1 (Docs/Contracts.md §5), so the engine never hands it more than the limit.
///
/// A lock, not an actor: a free slot is taken and given back without suspending. An actor's
/// methods run on the global executor, so a job on an event loop (``HTTPTransport/jobExecutors``)
/// went to a thread of the pool and back twice per request, to take its slot and to give it
/// back; only a request that finds every slot taken waits now.
package final class HostLimiter: Sendable {
    private struct State {
        var inUse: [String: Int] = [:]
        var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

        /// Takes a free slot for `host`; false when all are taken.
        mutating func take(_ host: String, limit: Int) -> Bool {
            guard inUse[host, default: 0] < limit else { return false }
            inUse[host, default: 0] += 1
            return true
        }
    }

    private let limit: Int
    private let state = NIOLockedValueBox(State())
    /// Each host's recent starts, for `requests_per_second`, and what its quota allows.
    private let pacing = NIOLockedValueBox([String: Pacing]())
    private struct Pacing {
        var pace = StartPace()
        var server = ServerPace()
    }
    private let time: any TimeSource

    package convenience init(limit: Int) {
        self.init(limit: limit, time: SystemTime())
    }

    /// A limiter whose pacing waits on `time` (tests advance a manual clock).
    package init(limit: Int, time: any TimeSource) {
        self.limit = max(1, limit)
        self.time = time
    }

    /// Takes a slot for `host` and waits until a start fits the host's pace (with
    /// `requestsPerSecond`, ``StartPace``) and its quota (after an answer with rate-limit headers): the
    /// request may start when this returns. A quota reset further away than `longestWait`
    /// seconds is not waited for: the request starts, and the retry policy deals with the 429
    /// as with any `Retry-After` beyond `retry_after_max`.
    package func acquire(_ host: String, requestsPerSecond: Int?, burst: Int = 1, longestWait: Double = .infinity) async {
        await acquire(host)
        while let wait = pacing.withLockedValue({ pacing -> Duration? in
            // A host that never sent a quota, for a job without `requests_per_second`: nothing
            // to check or to record (nearly every request of a run).
            guard var entry = pacing[host] ?? (requestsPerSecond == nil ? nil : Pacing()) else { return nil }
            let now = time.now
            defer { pacing[host] = entry }
            if let wait = entry.server.wait(at: now) {
                guard wait > .seconds(min(longestWait, 1e9)) else { return wait }
                entry.server.forget()  // not worth waiting for: unknown until the next answer
            }
            if let requestsPerSecond, let wait = entry.pace.admit(at: now, perSecond: requestsPerSecond, burst: burst) { return wait }
            entry.server.start(at: now)
            return nil
        }) {
            await time.sleep(for: wait)
        }
    }

    /// Takes in what an answer from `host` said about its quota (rate-limit headers), while its
    /// request still holds its slot.
    package func observe(_ hint: RateLimitHint, from host: String) {
        let inFlight = state.withLockedValue { $0.inUse[host, default: 1] }
        let now = time.now
        pacing.withLockedValue { $0[host, default: Pacing()].server.observe(hint, inFlight: inFlight, at: now) }
    }

    /// Takes a slot for `host`, waiting (first come, first served) while all are taken.
    package func acquire(_ host: String) async {
        if state.withLockedValue({ $0.take(host, limit: limit) }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // A slot may have come free since the look above: take it rather than wait for a
            // release that already happened.
            let taken = state.withLockedValue { state -> Bool in
                if state.take(host, limit: limit) { return true }
                state.waiters[host, default: []].append(continuation)
                return false
            }
            if taken { continuation.resume() }
        }
    }

    /// Gives a slot back: to the longest waiter for `host`, if any.
    package func release(_ host: String) {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if var queue = state.waiters[host], !queue.isEmpty {
                let next = queue.removeFirst()
                state.waiters[host] = queue.isEmpty ? nil : queue
                return next
            }
            state.inUse[host, default: 1] -= 1
            if state.inUse[host] == 0 { state.inUse[host] = nil }
            return nil
        }
        next?.resume()
    }

    /// Slots taken for `host` (for tests).
    package func inUse(_ host: String) -> Int {
        state.withLockedValue { $0.inUse[host, default: 0] }
    }

    /// Requests waiting for a slot for `host` (for tests).
    package func waiting(_ host: String) -> Int {
        state.withLockedValue { $0.waiters[host]?.count ?? 0 }
    }
}
