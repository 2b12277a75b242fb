import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPTransport`` on URLSession, following the rules measured for FoundationNetworking on
/// Linux (DESIGN.md §7): one long-lived session per connection limit, no cache, data tasks with a
/// session delegate, `Accept-Encoding: identity`, redirects returned to the engine.
///
/// Sessions are created once per process and never invalidated: invalidating a session with
/// tasks still winding down crashes in swift-corelibs-foundation 6.3.
///
/// Backlog guard: libcurl reads as fast as the network allows and queues every 16 KiB chunk for
/// the delegate queue; when the process cannot keep up (two cores busy hashing and writing),
/// that queue grew to a gigabyte in our 1 GiB benchmark. A timer watches the queue and, past
/// ``maxQueuedDeliveries`` chunks, cancels the transfers that are receiving bodies; the chunks
/// already queued are still delivered, the transfers complete with
/// ``TransportFailure/overloaded``, and the engine resumes them in bounded ranges.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let session: URLSession
    private let delegate: SessionDelegate
    private let queue: OperationQueue
    private let monitor: DispatchSourceTimer?
    /// About 4 MiB of undelivered body data.
    public static let maxQueuedDeliveries = 256

    private static let lock = NSLock()
    nonisolated(unsafe) private static var sessions: [String: URLSessionTransport] = [:]

    /// The process-wide transport for a per-host connection limit. `guardsBacklog: false` turns
    /// the backlog guard off, for tests that count bytes exactly while other tests load the
    /// machine; the product always guards.
    public static func shared(maximumConnectionsPerHost: Int, guardsBacklog: Bool = true) -> URLSessionTransport {
        lock.lock()
        defer { lock.unlock() }
        let key = "\(maximumConnectionsPerHost)/\(guardsBacklog)"
        if let existing = sessions[key] { return existing }
        let transport = URLSessionTransport(maximumConnectionsPerHost: maximumConnectionsPerHost, guardsBacklog: guardsBacklog)
        sessions[key] = transport
        return transport
    }

    private init(maximumConnectionsPerHost: Int, guardsBacklog: Bool) {
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
        delegate = SessionDelegate(guardsBacklog: guardsBacklog)
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

    public func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        urlRequest.httpBody = request.body
        let task = session.dataTask(with: urlRequest)
        delegate.register(task, handler)
        task.resume()
        return Task(task: task)
    }

    private struct Task: TransportTask, @unchecked Sendable {
        let task: URLSessionDataTask

        func cancel() {
            task.cancel()
        }
    }
}

/// Routes URLSession's delegate calls to each task's handler.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var handlers: [Int: any TransportResponseHandler] = [:]
    /// Tasks whose body is flowing, and those cancelled to shed load.
    private var receiving: [Int: URLSessionDataTask] = [:]
    private var shed: Set<Int> = []
    let guardsBacklog: Bool

    init(guardsBacklog: Bool) {
        self.guardsBacklog = guardsBacklog
    }

    func register(_ task: URLSessionDataTask, _ handler: any TransportResponseHandler) {
        lock.lock()
        handlers[task.taskIdentifier] = handler
        lock.unlock()
    }

    /// Cancels every transfer that is receiving a body; called when deliveries pile up. The
    /// cancels run on another queue: issued on the delegate queue they took effect far later.
    func shedLoad() {
        lock.lock()
        let tasks = receiving.values.filter { handlers[$0.taskIdentifier]?.allowsShedding ?? false }
        for task in tasks {
            shed.insert(task.taskIdentifier)
            receiving[task.taskIdentifier] = nil
        }
        lock.unlock()
        guard !tasks.isEmpty else { return }
        DispatchQueue.global().async {
            for task in tasks { task.cancel() }
        }
    }

    private func handler(_ identifier: Int, remove: Bool = false) -> (any TransportResponseHandler)? {
        lock.lock()
        defer { lock.unlock() }
        return remove ? handlers.removeValue(forKey: identifier) : handlers[identifier]
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse, let handler = handler(dataTask.taskIdentifier) else {
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let name = key as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let proceed = handler.didReceiveHead(TransportResponseHead(status: http.statusCode, headers: headers))
        if proceed { lock.withLock { receiving[dataTask.taskIdentifier] = dataTask } }
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        handler(dataTask.taskIdentifier)?.didReceiveBody(data)
        // The backlog behind this delivery is the queue's length: checking it here reacts as soon
        // as the queue grows, even when the monitor's timer thread is starved.
        if guardsBacklog, let queue = OperationQueue.current, queue.operationCount > URLSessionTransport.maxQueuedDeliveries {
            shedLoad()
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // The engine follows redirects itself: it records them, refuses https -> http, and keeps
        // in-flight tasks per host within the limit (redirects plus queued tasks can trap in 6.3).
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let wasShed = lock.withLock {
            receiving[task.taskIdentifier] = nil
            return shed.remove(task.taskIdentifier) != nil
        }
        let failure = error.map(Self.failure)
        handler(task.taskIdentifier, remove: true)?.didComplete(wasShed && failure == .cancelled ? .overloaded : failure)
    }

    static func failure(_ error: any Error) -> TransportFailure {
        guard let urlError = error as? URLError else { return .other(error.localizedDescription) }
        switch urlError.code {
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut
        case .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost,
             .dnsLookupFailed, .badServerResponse, .secureConnectionFailed, .resourceUnavailable:
            return .connection(urlError.localizedDescription)
        default:
            return .other(urlError.localizedDescription)
        }
    }
}
