import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Asks one mirror what it serves, for `check` and `pin`: `HEAD` (or, when HEAD is refused
/// with 405/501, `GET` with `Range: bytes=0-0`), following redirects; with `deep`, the whole
/// body streamed through sha256 in bounded ranges, never written to disk.
///
/// It follows the same rules as a download, from the job's ``JobNetwork``: the same redirect
/// policy (no scheme but http and https, no https→http unless allowed), the same credential
/// policy (nothing secret to another origin), the same retry policy (connection, timeout, 408,
/// 429, 5xx retried with backoff and a capped Retry-After; TLS failures and refused redirects
/// not retried), and messages through the job's redactor.
package struct MirrorProbe: Sendable {
    package var network: JobNetwork
    package var hosts: HostLimiter
    package var timeout: Double
    /// Bytes per range when hashing with --deep (bounded memory).
    package var rangeSize: Int64 = 8 << 20

    /// A probe with the job's network rules and idle timeout.
    package init(job: Job, network: JobNetwork, hosts: HostLimiter) {
        self.network = network
        self.hosts = hosts
        timeout = job.settings.timeout
    }

    /// One request with a body to the job's first URL (a hook's `POST`), following redirects
    /// by the job's policy: the answer's status, or why there was none. Tried once: the caller
    /// decides on retries (a hook's are fewer and shorter than a download's).
    package func send(method: String, extra: [(name: String, value: String)], body: Data,
                      interruption: Interruption? = nil) async -> (status: Int?, failure: BatchFetchError?) {
        guard let url = network.mirrors.first??.url else { return (nil, BatchFetchError(.connection, "invalid URL")) }
        let reply = await exchange(url, mirror: 0, method: method, extra: extra, body: DataBox(limit: 64 << 10), requestBody: body,
                                   interruption: interruption)
        switch reply.failed {
        case .fail(let failure, let status)?, .retry(let failure, let status, _)?: return (status, failure)
        case .done(let observation)?: return (observation.httpStatus, nil)
        case .headRefused?: return (nil, BatchFetchError(.connection, "no response"))
        case nil: return reply.head.map { ($0.status, nil) } ?? (nil, BatchFetchError(.connection, "no response"))
        }
    }

    /// What mirror `mirrorIndex` of the job serves.
    package func observe(mirror mirrorIndex: Int, deep: Bool) async -> MirrorObservation {
        guard network.mirrors.indices.contains(mirrorIndex), let url = network.mirrors[mirrorIndex]?.url else {
            return MirrorObservation(outcome: .unreachable("invalid URL"), httpStatus: nil, method: deep ? "GET" : "HEAD")
        }
        var attempts = AttemptLog()
        var method = "HEAD"
        while true {
            let attempt = deep ? await hashWhole(url, mirror: mirrorIndex) : await ask(url, mirror: mirrorIndex, method: method)
            switch attempt {
            case .done(let observation):
                return observation
            case .headRefused:
                method = "GET"
            case .fail(let failure, let status):
                return MirrorObservation(outcome: .unreachable(failure.errorDescription ?? failure.message), httpStatus: status,
                                         method: deep ? "GET" : method)
            case .retry(let failure, let status, let retryAfter):
                if let reason = await waitToRetry(failure, retryAfter: retryAfter, attempts: &attempts) {
                    return MirrorObservation(outcome: .unreachable(reason.message), httpStatus: status, method: deep ? "GET" : method)
                }
            }
        }
    }

    /// Counts a retryable failure and waits as the job's retry policy says; returns the reason to
    /// give up instead, when it does.
    private func waitToRetry(_ failure: BatchFetchError, retryAfter: Double?, attempts: inout AttemptLog) async -> BatchFetchError? {
        switch attempts.retry(after: failure, retryAfter: retryAfter, remaining: nil, policy: network.retry) {
        case .giveUp(let reason):
            return reason
        case .wait(let delay):
            try? await Task.sleep(for: .seconds(delay.draw()))
            return nil
        }
    }

    private enum Attempt {
        case done(MirrorObservation)
        case headRefused
        /// Not worth retrying: a refused redirect, a TLS failure.
        case fail(BatchFetchError, status: Int?)
        case retry(BatchFetchError, status: Int?, retryAfter: Double?)
    }

    /// One HEAD (or `GET bytes=0-0`), following redirects.
    private func ask(_ url: URL, mirror: Int, method: String) async -> Attempt {
        let range = method == "GET" ? [(name: "Range", value: "bytes=0-0")] : []
        let exchange = await exchange(url, mirror: mirror, method: method, extra: range, body: nil)
        if let failed = exchange.failed { return failed }
        guard let head = exchange.head else { return .retry(BatchFetchError(.connection, "no response"), status: nil, retryAfter: nil) }
        if Self.isEmptyRepresentation(head) {
            return .done(MirrorObservation(outcome: .answered, httpStatus: head.status, method: method, size: 0))
        }
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
    private func hashWhole(_ url: URL, mirror: Int) async -> Attempt {
        let digest = DigestBox()
        var offset: Int64 = 0
        var total: Int64?
        var first: TransportResponseHead?
        var validator: String?
        while total.map({ offset < $0 }) ?? true {
            var extra = [(name: "Range", value: "bytes=\(offset)-\(offset + rangeSize - 1)")]
            if let validator, offset > 0 { extra.append((name: "If-Range", value: validator)) }
            let saved = digest.state
            let exchange = await exchange(url, mirror: mirror, method: "GET", extra: extra, body: digest)
            if let failed = exchange.failed {
                digest.state = saved
                return failed
            }
            guard let head = exchange.head else {
                return .retry(BatchFetchError(.connection, "no response"), status: nil, retryAfter: nil)
            }
            if offset == 0, Self.isEmptyRepresentation(head) {
                first = head
                total = 0
                break
            }
            if let other = classify(head, method: "GET") { return other }
            let received = exchange.received
            if head.status == 200 {
                // Ranges ignored, or the content changed under If-Range: this body is all of it.
                guard received == ResponseHeaders.contentLength(head) ?? received else {
                    return .retry(BatchFetchError(.connection, "short body"), status: 200, retryAfter: nil)
                }
                first = head
                total = received
                offset = received
                break
            }
            guard let range = ResponseHeaders.contentRange(head.header("content-range")), range.first == offset,
                  let last = range.last, last - offset + 1 == received else {
                digest.state = saved
                return .retry(BatchFetchError(.rangeNotHonoured, "206 that does not match bytes \(offset)-"), status: 206, retryAfter: nil)
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

    /// A 416 with `Content-Range: bytes */0` to a request for the first bytes: the file is empty
    /// (caddy and twisted.web answer an empty file's `Range: bytes=0-` so, as RFC 9110 says).
    package static func isEmptyRepresentation(_ head: TransportResponseHead) -> Bool {
        head.status == 416 && ResponseHeaders.contentRange(head.header("content-range"))?.total == 0
    }

    /// A small file's whole body (a sum file for `checksums_from`, a page of a bucket's listing
    /// at `url`, asked on behalf of the mirror), following the job's rules; a failure saying why
    /// when it cannot be had or is larger than `limit`.
    package func fetch(mirror: Int, limit: Int, url: URL? = nil) async -> Result<Data, BatchFetchError> {
        await fetchResponse(mirror: mirror, limit: limit, url: url).map(\.data)
    }

    /// ``fetch(mirror:limit:url:)`` with the head of the answer that gave the body (a paginated
    /// API's `Link` header is in it).
    package func fetchResponse(mirror: Int, limit: Int, url: URL? = nil)
        async -> Result<(data: Data, head: TransportResponseHead?), BatchFetchError> {
        guard network.mirrors.indices.contains(mirror), let url = url ?? network.mirrors[mirror]?.url else {
            return .failure(BatchFetchError(.connection, "invalid URL"))
        }
        var attempts = AttemptLog()
        while true {
            let box = DataBox(limit: limit)
            let exchange = await exchange(url, mirror: mirror, method: "GET", extra: [], body: box)
            var problem: Attempt? = exchange.failed
            if problem == nil, let head = exchange.head {
                if Self.isEmptyRepresentation(head) { return .success((Data(), head)) }
                if box.overflowed { return .failure(BatchFetchError(.sizeMismatch, "larger than \(limit) bytes")) }
                problem = classify(head, method: "GET")
                if problem == nil { return .success((box.data, head)) }
            }
            switch problem {
            case .retry(let failure, _, let retryAfter)?:
                if let reason = await waitToRetry(failure, retryAfter: retryAfter, attempts: &attempts) { return .failure(reason) }
            case .fail(let failure, _)?:
                return .failure(failure)
            case .done(let observation)?:
                return .failure(BatchFetchError(.httpStatus, "HTTP \(observation.httpStatus ?? 0)"))
            case .headRefused?, nil:
                return .failure(BatchFetchError(.connection, "no response"))
            }
        }
    }

    /// Missing, refused HEAD, retryable, or hard failure; nil for a usable answer.
    private func classify(_ head: TransportResponseHead, method: String) -> Attempt? {
        switch head.status {
        case 404, 410: return .done(MirrorObservation(outcome: .missing, httpStatus: head.status, method: method))
        case 405 where method == "HEAD", 501 where method == "HEAD": return .headRefused
        default: break
        }
        switch AttemptVerdict(status: head.status, retryAfter: head.header("retry-after"), subject: "") {
        case .success:
            return nil
        case .retry(let failure, let retryAfter):
            return .retry(failure, status: head.status, retryAfter: retryAfter)
        case .redirect, .nextMirror, .interrupted:
            return .done(MirrorObservation(outcome: .unreachable("HTTP \(head.status)"), httpStatus: head.status, method: method))
        }
    }

    /// How one request ended, redirects followed.
    private struct Reply {
        var head: TransportResponseHead?
        /// The attempt's end when it got no usable head: retry or not.
        var failed: Attempt?
        /// Body bytes received (fed to the digest when one was given).
        var received: Int64 = 0
    }

    /// One request, following redirects as the job's redirect policy allows; the body is read
    /// only when `body` is given.
    private func exchange(_ url: URL, mirror: Int, method: String, extra: [(name: String, value: String)],
                          body: (any ProbeBody)?, requestBody: Data? = nil, interruption: Interruption? = nil) async -> Reply {
        var current = url
        var followed = 0
        while true {
            let request = network.request(current, mirrorIndex: mirror, method: method, extra: extra, body: requestBody, timeout: timeout)
            let handler = ProbeHandler(body: body)
            guard let (head, failure, received) = await Exchange.perform(
                request, handler: handler, transport: network.transport, hosts: hosts, interruption: interruption,
                idleTimeout: .seconds(timeout)) else {
                return Reply(head: nil, failed: .fail(BatchFetchError(.interrupted, "interrupted"), status: nil))
            }
            if let head, ResponseClass(status: head.status) == .redirect {
                switch network.redirect.decide(status: head.status, location: head.header("location"), from: current, followed: followed,
                                               bucketRegion: head.header("x-amz-bucket-region")) {
                case .follow(let target):
                    current = target
                    followed += 1
                    continue
                case .refuse(let failure):
                    return Reply(head: nil, failed: .fail(failure, status: head.status))
                }
            }
            // A failure after a head ends the attempt when the body was wanted, or when it was a
            // timeout; a HEAD's head is the answer.
            guard let failure, head == nil || failure == .timedOut || (body != nil && (200...299).contains(head!.status)) else {
                return Reply(head: head, received: received)
            }
            switch AttemptVerdict(failure, subject: "") {
            case .retry(let reason, _):
                return Reply(head: head, failed: .retry(reason, status: head?.status, retryAfter: nil), received: received)
            case let verdict:
                return Reply(head: nil, failed: .fail(verdict.failure!, status: nil))
            }
        }
    }

    /// The hex sha256 in an RFC 9530 `Repr-Digest`/`Content-Digest` value (`sha-256=:<base64>:`).
    package static func sha256(_ value: String?) -> String? {
        guard let value else { return nil }
        for member in value.split(separator: ",") {
            let parts = member.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "sha-256" else { continue }
            let encoded = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ":"))
            guard let bytes = Data(base64Encoded: encoded), bytes.count == 32 else { return nil }
            return bytes.withUnsafeBytes { Digester.hex($0) }
        }
        return nil
    }
}

/// Where a probe's response body goes, fed from the transport's queue.
package protocol ProbeBody: AnyObject, Sendable {
    func update(_ data: Data)
}

/// A running sha256 of a body.
package final class DigestBox: ProbeBody, Sendable {
    private let digester = NIOLockedValueBox(Digester())

    package var state: Digester {
        get { digester.withLockedValue { $0 } }
        set { digester.withLockedValue { $0 = newValue } }
    }

    package func update(_ data: Data) {
        digester.withLockedValue { $0.update(data) }
    }

    package func finalize() -> String? {
        digester.withLockedValue { $0.finalize()["sha256"] }
    }
}

/// A small body kept in memory (a sum file), up to `limit` bytes; past it, `overflowed`.
package final class DataBox: ProbeBody, Sendable {
    private let limit: Int
    private let stored = NIOLockedValueBox((data: Data(), tooLong: false))

    package init(limit: Int) {
        self.limit = limit
    }

    package func update(_ data: Data) {
        stored.withLockedValue {
            if $0.data.count + data.count > limit { $0.tooLong = true } else { $0.data.append(data) }
        }
    }

    package var data: Data { stored.withLockedValue { $0.data } }
    package var overflowed: Bool { stored.withLockedValue { $0.tooLong } }
}

/// The transport handler of one probe request: the head, and the body when one is wanted.
private final class ProbeHandler: WatchedHandler, Sendable {
    typealias Outcome = (head: TransportResponseHead?, failure: TransportFailure?, received: Int64)

    let watch = RequestWatch<Outcome>()
    private let body: (any ProbeBody)?
    private let seen = NIOLockedValueBox((head: TransportResponseHead?.none, received: Int64(0)))

    init(body: (any ProbeBody)?) {
        self.body = body
    }

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        seen.withLockedValue { $0.head = head }
        watch.touch()
        // Read a body only to hash it, and only a successful one.
        return body != nil && (200...299).contains(head.status)
    }

    func didReceiveBody(_ data: Data) {
        body?.update(data)
        seen.withLockedValue { $0.received += Int64(data.count) }
        watch.touch()
    }

    func didComplete(_ failure: TransportFailure?) {
        watch.complete { expired in
            seen.withLockedValue { seen in
                // A HEAD's transfer is cancelled once its head is in: that is no failure.
                let ignored = failure == .cancelled && seen.head != nil && body == nil
                return (seen.head, expired ? .timedOut : (ignored ? nil : failure), seen.received)
            }
        }
    }

    /// `check` and `pin` probe without an interruption; a hook's `POST` is cancelled by a signal.
    func interrupt() {
        watch.cancel()
    }

    /// Probes never need shedding: a HEAD has no body and --deep ranges are bounded.
    var allowsShedding: Bool { false }
}
