import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPTransport`` on URLSession, following the rules measured for FoundationNetworking on
/// Linux (Docs/Contracts.md §5): one long-lived session per connection limit, no cache, data tasks with a
/// session delegate, `Accept-Encoding: identity`, redirects returned to the engine.
///
/// Sessions are created once per process and never invalidated: invalidating a session with
/// tasks still winding down crashes in swift-corelibs-foundation 6.3.
///
/// Backlog guard: libcurl reads as fast as the network allows and queues every 16 KiB chunk for
/// the delegate queue; when the process cannot keep up (two cores busy hashing and writing),
/// that queue grew without bound (bench/results/history.md). A timer watches the queue and, past
/// ``maxQueuedDeliveries`` chunks, cancels the transfers that are receiving bodies; the chunks
/// already queued are still delivered, the transfers complete with
/// ``TransportFailure/overloaded``, and the engine resumes them in bounded ranges.
///
/// Hand-off: some responses URLSession cannot deliver faithfully — it inflates any
/// `Content-Encoding` whatever `Accept-Encoding` said (a `.tar.gz` served with
/// `Content-Encoding: gzip` arrives decoded, and a gzip bomb arrives a thousand times larger),
/// and it cannot pause a large body (a server that ignores `Range` sends the whole file, which
/// cost many cancelled attempts and hundreds of MiB of memory (bench/results/history.md)). Once the engine has
/// accepted such a response head, the transfer is cancelled at its head and the same request
/// is sent on the process's ``AsyncHTTPClientTransport`` (no decoding, backpressure), whose head must
/// match the first one; the engine sees one response. See ``ResponseHandoff``.
///
/// `@unchecked`: `URLSession` is thread-safe but not marked `Sendable` on Linux.
package final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let session: URLSession
    private let delegate: SessionDelegate
    private let queue: OperationQueue
    private let monitor: DispatchSourceTimer?
    /// Carries what URLSession cannot: responses it would decode or cannot pause, and uploads.
    private let handoff: AsyncHTTPClientTransport
    /// Which origins have proved they honour ranges: only those get range requests here.
    private let ranges: RangeSupport
    /// libcurl's proxy environment: a request through a proxy stays here, since AsyncHTTPClient
    /// tunnels even http:// URLs with CONNECT, which many proxies refuse.
    private let proxies = ProxySettings(environment: ProcessInfo.processInfo.environment)
    /// About 4 MiB of undelivered body data.
    package static let maxQueuedDeliveries = 256

    /// The process's transports, by connection limit and backlog guard.
    private static let sessions = NIOLockedValueBox([String: URLSessionTransport]())

    /// The process-wide transport for a per-host connection limit.
    package static func shared(maximumConnectionsPerHost: Int) -> URLSessionTransport {
        shared(maximumConnectionsPerHost: maximumConnectionsPerHost, guardsBacklog: true)
    }

    /// `guardsBacklog: false` turns the backlog guard off, for tests that count bytes exactly
    /// while other tests load the machine; the product always guards (so this is internal).
    package static func shared(maximumConnectionsPerHost: Int, guardsBacklog: Bool) -> URLSessionTransport {
        sessions.withLockedValue { sessions in
            let key = "\(maximumConnectionsPerHost)/\(guardsBacklog)"
            if let existing = sessions[key] { return existing }
            let transport = URLSessionTransport(maximumConnectionsPerHost: maximumConnectionsPerHost, guardsBacklog: guardsBacklog)
            sessions[key] = transport
            return transport
        }
    }

    private init(maximumConnectionsPerHost: Int, guardsBacklog: Bool) {
        let handoff = AsyncHTTPClientTransport.shared(maximumConnectionsPerHost: maximumConnectionsPerHost)
        self.handoff = handoff
        let ranges = RangeSupport()
        self.ranges = ranges
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        configuration.timeoutIntervalForRequest = 3600
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "batchfetch.urlsession.delegate"
        delegate = SessionDelegate(guardsBacklog: guardsBacklog, handoff: handoff, ranges: ranges)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        self.queue = queue
        guard guardsBacklog else {
            monitor = nil
            return
        }
        let monitor = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "batchfetch.urlsession.monitor"))
        monitor.schedule(deadline: .now(), repeating: .milliseconds(2), leeway: .milliseconds(1))
        monitor.setEventHandler { [queue, delegate] in
            if queue.operationCount > Self.maxQueuedDeliveries { delegate.shedLoad() }
        }
        monitor.resume()
        self.monitor = monitor
    }

    /// Uploads go to the hand-off transport from the start: FoundationNetworking 6.3 sends a
    /// streamed body (`httpBodyStream`) chunked even when the request has a `Content-Length`, so
    /// both headers go out together (RFC 9112 §6.1 forbids that; nginx refuses it with 400), and
    /// `uploadTask(fromFile:)` takes a path, which it opens again by name (not beneath the
    /// output directory's descriptor, not the bytes that were hashed) and sizes `/dev/fd/N` as
    /// the 64-byte link it is (Docs/Architecture.md, "Uploads").
    package func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask {
        if request.upload != nil { return handoff.start(request, handler: handler) }
        // A range request to an origin not yet known to honour ranges may be answered with a whole
        // file, which URLSession cannot pause: the transport with backpressure asks (RangeSupport).
        if request.asksRange, let origin = Origin(request.url), !ranges.honoured(by: origin), proxies.proxy(for: request.url) == nil {
            // `Connection: close`: the other transport's connection does not stay open beside
            // URLSession's, so the two together keep within `per_host`.
            var asking = request
            asking.headers.append((name: "Connection", value: "close"))
            return handoff.start(asking, handler: ranges.learning(for: request.url, askedRange: true, handler))
        }
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        urlRequest.httpBody = request.body
        let task = session.dataTask(with: urlRequest)
        let current = CurrentTask(DataTask(task: task))
        delegate.register(task, Registration(handler: handler, request: request, current: current))
        task.resume()
        return current
    }

    private struct DataTask: TransportTask {
        let task: URLSessionDataTask

        func cancel() {
            task.cancel()
        }
    }
}

/// The task a request is running on now: the URLSession task, or after a hand-off the other
/// transport's. A cancel reaches whichever it is (and one made before the hand-off finished).
package final class CurrentTask: TransportTask, Sendable {
    private let state: NIOLockedValueBox<(task: any TransportTask, cancelled: Bool)>

    package init(_ task: any TransportTask) {
        state = NIOLockedValueBox((task, false))
    }

    package func cancel() {
        let task = state.withLockedValue { state in
            state.cancelled = true
            return state.task
        }
        task.cancel()
    }

    /// The request continues on `next`.
    package func replace(with next: any TransportTask) {
        let cancelled = state.withLockedValue { state in
            state.task = next
            return state.cancelled
        }
        if cancelled { next.cancel() }
    }
}

/// What the delegate knows of one URLSession task.
private struct Registration {
    var handler: any TransportResponseHandler
    var request: TransportRequest
    var current: CurrentTask
}

/// Routes URLSession's delegate calls to each task's handler.
///
/// `@unchecked`: an `NSObject` subclass, which the compiler cannot check; what changes is in
/// `tasks`, behind its lock.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// The tasks the delegate knows, by task identifier.
    private struct Tasks {
        var registrations: [Int: Registration] = [:]
        /// Tasks whose body is flowing, and those cancelled to shed load.
        var receiving: [Int: URLSessionDataTask] = [:]
        var shed: Set<Int> = []
        /// Tasks whose head the handler refused: their body is never delivered. A `.cancel`
        /// disposition does not stop what libcurl already read, and FoundationNetworking
        /// delivered a refused 416's 33-byte error text (caddy's answer for an empty file), which
        /// `check --deep` hashed as the file and `run` counted as transferred.
        var refused: Set<Int> = []
    }

    private let tasks = NIOLockedValueBox(Tasks())
    package let guardsBacklog: Bool
    private let handoff: any HTTPTransport
    private let ranges: RangeSupport

    package init(guardsBacklog: Bool, handoff: any HTTPTransport, ranges: RangeSupport) {
        self.guardsBacklog = guardsBacklog
        self.handoff = handoff
        self.ranges = ranges
    }

    package func register(_ task: URLSessionDataTask, _ registration: Registration) {
        tasks.withLockedValue { $0.registrations[task.taskIdentifier] = registration }
    }

    /// Cancels every transfer that is receiving a body; called when deliveries pile up. The
    /// cancels run on another queue: issued on the delegate queue they took effect far later.
    package func shedLoad() {
        let shedding = tasks.withLockedValue { tasks in
            let shedding = tasks.receiving.values.filter { tasks.registrations[$0.taskIdentifier]?.handler.allowsShedding ?? false }
            for task in shedding {
                tasks.shed.insert(task.taskIdentifier)
                tasks.receiving[task.taskIdentifier] = nil
            }
            return shedding
        }
        guard !shedding.isEmpty else { return }
        DispatchQueue.global().async {
            for task in shedding { task.cancel() }
        }
    }

    private func handler(_ identifier: Int, remove: Bool = false) -> (any TransportResponseHandler)? {
        tasks.withLockedValue { remove ? $0.registrations.removeValue(forKey: identifier) : $0.registrations[identifier] }?.handler
    }

    package func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse,
              let registration = tasks.withLockedValue({ $0.registrations[dataTask.taskIdentifier] }) else {
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let name = key as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let head = TransportResponseHead(status: http.statusCode, headers: headers)
        ranges.learn(from: head, url: registration.request.url, askedRange: registration.request.asksRange)
        let proceed = registration.handler.didReceiveHead(head)
        if proceed, ResponseHandoff.needed(head, request: registration.request) {
            // The rest of this request belongs to the hand-off transport: this task's end is
            // not reported (its registration goes), the other transport's is.
            tasks.withLockedValue { _ = $0.registrations.removeValue(forKey: dataTask.taskIdentifier) }
            refuse(dataTask, head: head, completionHandler: completionHandler)
            let relay = ResponseHandoff(handler: registration.handler, accepted: head)
            registration.current.replace(with: handoff.start(registration.request, handler: relay))
            return
        }
        guard proceed else {
            tasks.withLockedValue { _ = $0.refused.insert(dataTask.taskIdentifier) }
            refuse(dataTask, head: head, completionHandler: completionHandler)
            return
        }
        tasks.withLockedValue { $0.receiving[dataTask.taskIdentifier] = dataTask }
        completionHandler(.allow)
    }

    /// Stops a response whose body is not wanted. The `.cancel` disposition is answered on the
    /// delegate queue, and libcurl went on reading meanwhile: a refused 200 to a stale range
    /// still moved the whole file (32 MiB of 32; four segments, 200 MB for a 32 MiB file). A
    /// file body is therefore allowed and cancelled at once from another thread, which stops it
    /// within milliseconds; its first bytes are dropped by the handler. Small bodies (error
    /// pages, redirects) and bodies of unknown length keep the disposition: cancelling them
    /// could race their completion, which traps in FoundationNetworking 6.3.
    private func refuse(_ task: URLSessionDataTask, head: TransportResponseHead,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let fileBody = head.status == 200 || head.status == 206
        guard fileBody, let length = ResponseHeaders.contentLength(head), length > 1 << 20 else {
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
        DispatchQueue.global().async { task.cancel() }
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let wanted = tasks.withLockedValue { $0.refused.contains(dataTask.taskIdentifier) ? nil : $0.registrations[dataTask.taskIdentifier] }
        wanted?.handler.didReceiveBody(data)
        // The backlog behind this delivery is the queue's length: checking it here reacts as soon
        // as the queue grows, even when the monitor's timer thread is starved.
        if guardsBacklog, let queue = OperationQueue.current, queue.operationCount > URLSessionTransport.maxQueuedDeliveries {
            shedLoad()
        }
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // The engine follows redirects itself: it records them, refuses https -> http, and keeps
        // in-flight tasks per host within the limit (redirects plus queued tasks can trap in 6.3).
        completionHandler(nil)
    }

    /// A 401 (or 407) with a challenge: batchfetch sends its credentials up front (Basic from
    /// userinfo or `.netrc`, or the job's headers), so there is nothing to answer with, and the
    /// response is the job's to judge. Without this method — or with `.performDefaultHandling` —
    /// FoundationNetworking 6.3 holds the response until the idle timeout (10 s for a 401 with
    /// `timeout: 8s`); rejecting the protection space delivers it at once.
    package func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.rejectProtectionSpace, nil)
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let wasShed = tasks.withLockedValue { tasks in
            tasks.receiving[task.taskIdentifier] = nil
            tasks.refused.remove(task.taskIdentifier)
            return tasks.shed.remove(task.taskIdentifier) != nil
        }
        let failure = error.map(Self.failure)
        handler(task.taskIdentifier, remove: true)?.didComplete(wasShed && failure == .cancelled ? .overloaded : failure)
    }

    package static func failure(_ error: any Error) -> TransportFailure {
        guard let urlError = error as? URLError else { return .other(error.localizedDescription) }
        if isTLSFailure(urlError) {
            return .tls(urlError.localizedDescription + "; for a private CA set 'tls: ca_file' or SSL_CERT_FILE")
        }
        switch urlError.code {
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut
        case .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost,
             .dnsLookupFailed, .badServerResponse, .resourceUnavailable:
            return .connection(urlError.localizedDescription)
        default:
            return .other(urlError.localizedDescription)
        }
    }

    /// Whether the transfer failed in the TLS handshake. FoundationNetworking 6.3 reports
    /// libcurl's certificate and handshake errors as `URLError.unknown` carrying only libcurl's
    /// message ("SSL certificate problem: self-signed certificate", "SSL: no alternative
    /// certificate subject name matches target host name"), so the message decides when the code
    /// cannot.
    package static func isTLSFailure(_ error: URLError) -> Bool {
        switch error.code {
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired:
            return true
        case .unknown:
            let message = error.localizedDescription
            return message.contains("SSL") || message.contains("TLS") || message.contains("certificate")
        default:
            return false
        }
    }
}
