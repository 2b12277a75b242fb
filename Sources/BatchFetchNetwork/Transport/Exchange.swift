import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers

/// A transport handler whose request is watched by a ``RequestWatch``: what ``Exchange`` needs
/// to run it.
package protocol WatchedHandler: TransportResponseHandler {
    associatedtype Outcome: Sendable
    var watch: RequestWatch<Outcome> { get }
    /// The run was interrupted while the request is in flight.
    func interrupt()
}

/// One request on the wire, the same way for a download, a segment's range and a mirror probe:
/// take a `per_host` slot for the host (and a start in its `requests_per_second` window),
/// register with the run's interruption, start the transfer, wait for its end (cancelling it
/// when idle for `idleTimeout` seconds or past the deadline), then give everything back.
package enum Exchange {
    /// The handler's outcome, or nil when the request never started: the run was interrupted, or
    /// `proceed` (asked once the host slot is held) said no.
    package static func perform<Handler: WatchedHandler>(
        _ request: TransportRequest, handler: Handler, transport: any HTTPTransport, hosts: HostLimiter,
        interruption: Interruption?, idleTimeout: Duration, deadline: ContinuousClock.Instant? = nil, proceed: () -> Bool = { true }
    ) async -> Handler.Outcome? {
        let host = request.url.host ?? ""
        await hosts.acquire(host, requestsPerSecond: request.requestsPerSecond, burst: request.requestBurst,
                            longestWait: request.longestPace)
        var outcome: Handler.Outcome?
        if interruption?.register(handler) ?? true {
            if proceed() {
                let paced = QuotaReader(handler, host: host, hosts: hosts)
                handler.watch.attach(transport.start(signed(request), handler: paced))
                // An interrupt between `register` and `attach` found no transfer to cancel.
                if interruption?.isInterrupted == true { handler.interrupt() }
                outcome = await handler.watch.outcome(idleTimeout: idleTimeout, deadline: deadline)
            }
            interruption?.unregister(handler)
        }
        hosts.release(host)
        return outcome
    }
}

extension Exchange {
    /// `request` with its signature headers, made now (a SigV4 signature carries its time, and
    /// the request may have waited for its host).
    package static func signed(_ request: TransportRequest, at date: Date = Date()) -> TransportRequest {
        guard let signer = request.signer else { return request }
        var signed = request
        let payload = request.upload == nil && (request.body?.isEmpty ?? true) ? SigV4Signer.emptyPayload : SigV4Signer.unsignedPayload
        signed.headers += signer.headers(method: request.method, url: request.url, headers: SigV4Signer.signedHeaders(of: request.headers),
                                         payloadHash: payload, date: date)
        return signed
    }
}

/// Passes a request's events to its handler, and what the response head says about the host's
/// quota (``RateLimitHint``) to the ``HostLimiter``, for every kind of request alike.
private final class QuotaReader: TransportResponseHandler {
    private let handler: any TransportResponseHandler
    private let host: String
    private let hosts: HostLimiter

    init(_ handler: any TransportResponseHandler, host: String, hosts: HostLimiter) {
        self.handler = handler
        self.host = host
        self.hosts = hosts
    }

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        if let hint = RateLimitHint(head, now: Date()) { hosts.observe(hint, from: host) }
        return handler.didReceiveHead(head)
    }

    func didReceiveBody(_ data: Data) { handler.didReceiveBody(data) }
    func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) { handler.didReceiveBody(data, ready: ready) }
    func didComplete(_ failure: TransportFailure?) { handler.didComplete(failure) }
    var allowsShedding: Bool { handler.allowsShedding }
}

/// The life of one request, shared by its handler and its waiter: the transport task (to
/// cancel), the last sign of activity (for the idle timeout), and the outcome once the transport
/// reports the end. The ``Watchdog`` cancels the request when it goes idle or passes its deadline.
/// Both read the same ``TimeSource``: tests advance a manual one.
package final class RequestWatch<Outcome: Sendable>: Watched {
    private struct State {
        var task: (any TransportTask)?
        var lastActivity: ContinuousClock.Instant
        /// What the watchdog enforces while ``outcome(idleTimeout:deadline:)`` waits.
        var idleTimeout: Duration?
        var deadline: ContinuousClock.Instant?
        /// The watchdog cancelled the transfer (idle or deadline).
        var expired = false
        var outcome: Outcome?
        var waiter: CheckedContinuation<Outcome, Never>?
        /// Ends the request when the transport never reports the end of a cancelled transfer.
        var lost: (@Sendable () -> Void)?
    }

    /// How long after a cancel the transport has to report the end before ``whenLost(_:)``'s
    /// handler ends the request instead.
    package static var lostAfter: Duration { .seconds(5) }

    private let state: NIOLockedValueBox<State>
    private let watchdog: Watchdog
    private var time: any TimeSource { watchdog.time }

    /// A watch checked by `watchdog`, on its time.
    package init(watchdog: Watchdog = .shared) {
        self.watchdog = watchdog
        state = NIOLockedValueBox(State(lastActivity: watchdog.time.now))
    }

    /// The transfer started: the idle clock starts now, not while waiting for a host slot.
    package func attach(_ task: any TransportTask) {
        state.withLockedValue {
            $0.task = task
            $0.lastActivity = time.now
        }
    }

    /// Bytes or a head arrived, or the request waited on our own disk (not the server's silence).
    package func touch() {
        state.withLockedValue { $0.lastActivity = time.now }
    }

    /// Opts in to ending the request without the transport: `lost` runs when a transfer this
    /// watch cancelled has not reported its end ``lostAfter`` later. AsyncHTTPClient 1.x was seen
    /// to drop the end of an upload cancelled between the response head and the end of its
    /// request body; without this the request's waiter would wait forever.
    package func whenLost(_ lost: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.lost = lost }
    }

    /// Cancels the transfer and, when the watch has a ``whenLost(_:)`` handler, runs it if the
    /// transport has not reported the end ``lostAfter`` later: the task that checks, which
    /// tests await.
    @discardableResult
    package func cancel() -> Task<Void, Never>? {
        guard let task = runningTask else { return nil }
        task.cancel()
        let check = state.withLockedValue { $0.lost }
        guard check != nil else { return nil }
        return Task { [state, time] in
            await time.sleep(for: Self.lostAfter)
            let lost = state.withLockedValue { $0.outcome == nil ? $0.lost : nil }
            lost?()
        }
    }

    /// Cancels the transfer `grace` from now unless it has ended by then: an interrupted
    /// transfer close to its end may finish, but one that stalled there must not hold the run
    /// (it held the exit for the whole idle timeout). Returns the task that waits, which tests
    /// await.
    @discardableResult
    package func cancel(unlessEndedWithin grace: Duration) -> Task<Void, Never> {
        Task { [time] in
            await time.sleep(for: grace)
            if runningTask != nil { _ = cancel() }
        }
    }

    /// Runs `end` `after` from now unless the transport has reported the end by then: for a
    /// request the run no longer waits for (interrupted), whose transport may never report it.
    @discardableResult
    package func abandon(after delay: Duration, _ end: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task { [state, time] in
            await time.sleep(for: delay)
            if state.withLockedValue({ $0.outcome == nil }) { end() }
        }
    }

    /// The transport task while the request runs; nil once it ended.
    package var runningTask: (any TransportTask)? {
        state.withLockedValue { $0.outcome == nil ? $0.task : nil }
    }

    /// The transport task, to cancel a transfer that is no longer wanted.
    package var attachedTask: (any TransportTask)? {
        state.withLockedValue { $0.task }
    }

    /// The transport reported the end: `make` turns it into the outcome, told whether the
    /// watchdog caused it; the waiter resumes with it. The first end counts: a handler that saw
    /// the whole response may end the request before the transport does.
    package func complete(_ make: (_ expired: Bool) -> Outcome) {
        let (waiter, outcome) = state.withLockedValue { state -> (CheckedContinuation<Outcome, Never>?, Outcome?) in
            guard state.outcome == nil else { return (nil, nil) }
            let outcome = make(state.expired)
            state.outcome = outcome
            defer { state.waiter = nil }
            return (state.waiter, outcome)
        }
        if let outcome { waiter?.resume(returning: outcome) }
    }

    /// Waits for the outcome, cancelling the transfer when nothing arrives for `idleTimeout` or
    /// the deadline passes.
    package func outcome(idleTimeout: Duration, deadline: ContinuousClock.Instant?) async -> Outcome {
        state.withLockedValue {
            $0.idleTimeout = idleTimeout
            $0.deadline = deadline
        }
        watchdog.add(self, every: min(.seconds(1), idleTimeout / 4))
        defer { watchdog.remove(self) }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let ready = state.withLockedValue { state -> Outcome? in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Cancels the transfer once it is idle for longer than its timeout or past its deadline
    /// (the watchdog's tick).
    package func check(at now: ContinuousClock.Instant) {
        let expires = state.withLockedValue { state -> Bool in
            guard state.outcome == nil, !state.expired, let idleTimeout = state.idleTimeout else { return false }
            let idle = now - state.lastActivity > idleTimeout
            guard idle || (state.deadline.map { now >= $0 } ?? false) else { return false }
            state.expired = true
            return true
        }
        if expires { _ = cancel() }
    }
}
