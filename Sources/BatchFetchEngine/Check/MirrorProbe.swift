import BatchFetchSpec
import Foundation

/// Asks one mirror what it serves, for `check` and `pin`: `HEAD` (or, when HEAD is refused
/// with 405/501, `GET` with `Range: bytes=0-0`), following redirects; with `deep`, the whole
/// body streamed through sha256 in bounded ranges, never written to disk. Transient failures
/// (connection, timeout, 408, 429, 5xx) are retried with the job's backoff and Retry-After.
struct MirrorProbe: Sendable {
    var transport: any HTTPTransport
    var hosts: HostLimiter
    var headers: [(name: String, value: String)]
    var retries: Int
    var backoff: Double
    var backoffMax: Double
    var timeout: Double
    /// Bytes per range when hashing with --deep (bounded memory).
    var rangeSize: Int64 = 8 << 20

    /// A probe with the job's headers, retries, backoff and idle timeout.
    init(job: Job, transport: any HTTPTransport, hosts: HostLimiter) {
        self.transport = transport
        self.hosts = hosts
        headers = job.requestHeaders
        retries = job.settings.retries
        backoff = job.settings.backoff
        backoffMax = job.settings.backoffMax
        timeout = job.settings.timeout
    }

    func observe(_ url: String, deep: Bool) async -> MirrorObservation {
        var failures = 0
        var method = "HEAD"
        while true {
            let attempt = deep ? await hashWhole(url) : await ask(url, method: method)
            switch attempt {
            case .done(let observation):
                return observation
            case .headRefused:
                method = "GET"
            case .retry(let reason, let status, let retryAfter):
                failures += 1
                guard failures <= retries else {
                    return MirrorObservation(outcome: .unreachable(reason), httpStatus: status, method: deep ? "GET" : method)
                }
                let delay = retryAfter.map { RetryDelay(seconds: $0, jitter: false) }
                    ?? .backoff(failure: failures, base: backoff, cap: backoffMax)
                try? await Task.sleep(nanoseconds: UInt64(min(delay.draw(), 3600) * 1e9))
            }
        }
    }

    private enum Attempt {
        case done(MirrorObservation)
        case headRefused
        case retry(String, status: Int?, retryAfter: Double?)
    }

    /// One HEAD (or `GET bytes=0-0`), following redirects.
    private func ask(_ url: String, method: String) async -> Attempt {
        let range = method == "GET" ? [(name: "Range", value: "bytes=0-0")] : []
        let (head, failure, _) = await exchange(url, method: method, extra: range, body: nil)
        guard let head else { return .retry(failure ?? "no response", status: nil, retryAfter: nil) }
        if let other = classify(head, method: method) { return other }
        var observation = MirrorObservation(outcome: .answered, httpStatus: head.status, method: method)
        observation.etag = head.header("etag")
        observation.lastModified = head.header("last-modified")
        if head.status == 206 {
            observation.size = ResponseHeaders.contentRange(head.header("content-range"))?.total
        } else {
            observation.size = ResponseHeaders.contentLength(head)
        }
        // Content-Digest covers this message's content: the whole file only for a full answer.
        observation.sha256 = Self.sha256(head.header("repr-digest"))
            ?? (head.status == 206 ? nil : Self.sha256(head.header("content-digest")))
        return .done(observation)
    }

    /// --deep: the whole content through sha256, range by range, each validated by If-Range.
    private func hashWhole(_ url: String) async -> Attempt {
        let digest = DigestBox()
        var offset: Int64 = 0
        var total: Int64?
        var first: TransportResponseHead?
        var validator: String?
        while total.map({ offset < $0 }) ?? true {
            var extra = [(name: "Range", value: "bytes=\(offset)-\(offset + rangeSize - 1)")]
            if let validator, offset > 0 { extra.append((name: "If-Range", value: validator)) }
            let saved = digest.state
            let (head, failure, received) = await exchange(url, method: "GET", extra: extra, body: digest)
            guard let head else { return .retry(failure ?? "no response", status: nil, retryAfter: nil) }
            if let other = classify(head, method: "GET") { return other }
            if let failure {
                digest.state = saved
                return .retry(failure, status: head.status, retryAfter: nil)
            }
            if head.status == 200 {
                // Ranges ignored, or the content changed under If-Range: this body is all of it.
                guard received == ResponseHeaders.contentLength(head) ?? received else {
                    return .retry("short body", status: 200, retryAfter: nil)
                }
                first = head
                total = received
                offset = received
                break
            }
            guard let range = ResponseHeaders.contentRange(head.header("content-range")), range.first == offset,
                  let last = range.last, last - offset + 1 == received else {
                digest.state = saved
                return .retry("206 that does not match bytes \(offset)-", status: 206, retryAfter: nil)
            }
            if first == nil {
                first = head
                validator = ResponseHeaders.strongETag(head) ?? head.header("last-modified")
            }
            total = range.total ?? total
            offset = last + 1
            if range.total == nil && received < rangeSize { total = offset }
        }
        var observation = MirrorObservation(outcome: .answered, httpStatus: first?.status, method: "GET", hashed: true)
        observation.size = total ?? offset
        observation.etag = first?.header("etag")
        observation.lastModified = first?.header("last-modified")
        observation.sha256 = digest.finalize()
        return .done(observation)
    }

    /// Missing, refused HEAD, retryable, or hard failure; nil for a usable answer.
    private func classify(_ head: TransportResponseHead, method: String) -> Attempt? {
        switch head.status {
        case 200...299: return nil
        case 404, 410: return .done(MirrorObservation(outcome: .missing, httpStatus: head.status, method: method))
        case 405 where method == "HEAD", 501 where method == "HEAD": return .headRefused
        case 408, 429, 500...599:
            return .retry("HTTP \(head.status)", status: head.status,
                          retryAfter: ResponseHeaders.retryAfter(head.header("retry-after"), now: Date()))
        default:
            return .done(MirrorObservation(outcome: .unreachable("HTTP \(head.status)"), httpStatus: head.status, method: method))
        }
    }

    /// One request with up to 10 redirects; returns the final head, a failure, and body bytes
    /// received (fed to `body` when given; otherwise the body is not read).
    private func exchange(_ url: String, method: String, extra: [(name: String, value: String)], body: DigestBox?) async
        -> (TransportResponseHead?, String?, Int64) {
        var current = url
        for _ in 0...10 {
            guard let target = URL(string: current), let host = target.host else { return (nil, "invalid URL \(current)", 0) }
            let request = TransportRequest(url: target, method: method, headers: headers + extra, timeout: timeout + 30)
            let handler = ProbeHandler(body: body)
            await hosts.acquire(host)
            handler.attach(transport.start(request, handler: handler))
            let (head, failure, received) = await handler.finished(idleTimeout: timeout)
            await hosts.release(host)
            if let head, [301, 302, 303, 307, 308].contains(head.status), let location = head.header("location"),
               let next = URL(string: location, relativeTo: target)?.absoluteURL.absoluteString {
                current = next
                continue
            }
            return (head, failure, received)
        }
        return (nil, "more than 10 redirects", 0)
    }

    /// The hex sha256 in an RFC 9530 `Repr-Digest`/`Content-Digest` value (`sha-256=:<base64>:`).
    static func sha256(_ value: String?) -> String? {
        guard let value else { return nil }
        for member in value.split(separator: ",") {
            let parts = member.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "sha-256" else { continue }
            let encoded = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ":"))
            guard let bytes = Data(base64Encoded: encoded), bytes.count == 32 else { return nil }
            return bytes.map { String(format: "%02x", $0) }.joined()
        }
        return nil
    }
}

/// A running sha256 fed from the transport's queue.
final class DigestBox: @unchecked Sendable {
    private let lock = NSLock()
    private var digester = Digester()

    var state: Digester {
        get { lock.withLock { digester } }
        set { lock.withLock { digester = newValue } }
    }

    func update(_ data: Data) {
        lock.withLock { digester.update(data) }
    }

    func finalize() -> String? {
        lock.withLock { digester.finalize()["sha256"] }
    }
}

/// The transport handler of one probe request.
private final class ProbeHandler: TransportResponseHandler, @unchecked Sendable {
    private let lock = NSLock()
    private let body: DigestBox?
    private var task: (any TransportTask)?
    private var head: TransportResponseHead?
    private var received: Int64 = 0
    private var failure: String?
    private var lastActivity = DispatchTime.now()
    private var timedOut = false
    private var done = false
    private var continuation: CheckedContinuation<Void, Never>?

    init(body: DigestBox?) {
        self.body = body
    }

    func attach(_ task: any TransportTask) {
        lock.withLock { self.task = task }
    }

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        lock.withLock {
            self.head = head
            lastActivity = .now()
        }
        // Read a body only to hash it, and only a successful one.
        return body != nil && (200...299).contains(head.status)
    }

    func didReceiveBody(_ data: Data) {
        body?.update(data)
        lock.withLock {
            received += Int64(data.count)
            lastActivity = .now()
        }
    }

    func didComplete(_ failure: TransportFailure?) {
        let continuation = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            done = true
            if timedOut {
                self.failure = "no data within the idle timeout"
            } else if let failure, !(failure == .cancelled && head != nil && body == nil) {
                self.failure = "\(failure)"
            }
            let continuation = self.continuation
            self.continuation = nil
            return continuation
        }
        continuation?.resume()
    }

    /// Probes never need shedding: a HEAD has no body and --deep ranges are bounded.
    var allowsShedding: Bool { false }

    func finished(idleTimeout: Double) async -> (TransportResponseHead?, String?, Int64) {
        let watchdog = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(min(1.0, idleTimeout / 4) * 1e9))
                let expired: (any TransportTask)? = lock.withLock {
                    guard !done, DispatchTime.now().seconds(since: lastActivity) > idleTimeout else { return nil }
                    timedOut = true
                    return task
                }
                if let expired {
                    expired.cancel()
                    return
                }
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = lock.withLock { () -> Bool in
                if done { return true }
                self.continuation = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        watchdog.cancel()
        return lock.withLock { (head, failure, received) }
    }
}
