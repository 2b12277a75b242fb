import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// One HTTP request as the engine asks for it. Redirects are never followed by a transport: the
/// engine sees the 3xx response and decides (see ``DownloadStateMachine``).
public struct TransportRequest: Sendable {
    public var url: URL
    public var method: String
    public var headers: [(name: String, value: String)]
    public var body: Data?
    /// A file to send as the body (an upload); `body` is then nil.
    public var upload: UploadBody?
    /// The transport's own timeout, a safety net behind the engine's idle watchdog.
    public var timeout: TimeInterval
    /// Requests to the host start one every 1/N second (the job's `requests_per_second`): the
    /// engine waits before starting it (``HostLimiter``); transports ignore it.
    public var requestsPerSecond: Int?
    /// Starts that may go at once under ``requestsPerSecond`` (the job's `burst`).
    public var requestBurst = 1
    /// The longest wait, in seconds, for a host's quota to reset (rate-limit headers,
    /// ``ServerPace``) before the request starts anyway: the job's `retry_after_max`.
    public var longestPace = JobSettings().retryAfterMax
    /// Signs the request (an object store's) when it starts, after any wait for the host:
    /// ``Exchange`` adds the headers. Transports ignore it.
    package var signer: SigV4Signer?

    public init(url: URL, method: String = "GET", headers: [(name: String, value: String)] = [], body: Data? = nil,
                upload: UploadBody? = nil, timeout: TimeInterval = 60) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.upload = upload
        self.timeout = timeout
    }
}

extension TransportRequest {
    /// Whether the request asks for a range of the resource.
    package var asksRange: Bool {
        headers.contains { $0.name.lowercased() == "range" }
    }
}

/// Status line and headers of a response; header names are lowercased.
public struct TransportResponseHead: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]

    public init(status: Int, headers: [String: String]) {
        self.status = status
        // The transports already lowercase them: no copy of the dictionary then.
        self.headers = headers.keys.allSatisfy(Self.isLowercase) ? headers
            : Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    public func header(_ name: String) -> String? {
        headers[Self.isLowercase(name) ? name : name.lowercased()]
    }

    private static func isLowercase(_ name: String) -> Bool {
        !name.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
    }
}

/// Why a transfer ended without a complete response.
public enum TransportFailure: Error, Sendable, Equatable {
    case timedOut
    case connection(String)
    case cancelled
    /// The transport cancelled the transfer because data it had received but not yet delivered
    /// piled up past its limit (no backpressure in URLSession): resume it, in smaller pieces.
    case overloaded
    /// The TLS handshake failed: an untrusted or mismatched certificate, a client certificate
    /// refused. Not retried: the next attempt would meet the same certificate.
    case tls(String)
    case other(String)
}

/// Receives one response. Calls arrive on the transport's delivery queue, in order: one
/// `didReceiveHead`, any number of `didReceiveBody`, one `didComplete` (or only `didComplete` when
/// no response came). Implementations must return quickly: URLSession on Linux delivers every
/// task of the process on one serial queue.
public protocol TransportResponseHandler: AnyObject, Sendable {
    /// Returns false to cancel the transfer (its completion reports `.cancelled`); no body byte
    /// of a refused response reaches the handler.
    func didReceiveHead(_ head: TransportResponseHead) -> Bool
    func didReceiveBody(_ data: Data)
    func didComplete(_ failure: TransportFailure?)
    /// Whether the transport may cancel this transfer to shed load. A transfer whose remaining
    /// body is small should finish instead: FoundationNetworking 6.3 traps ("Trying to access a
    /// behaviour for a task that in not in the registry") when a cancel races the task's own
    /// completion, so the engine cancels only transfers that are far from their end.
    var allowsShedding: Bool { get }
    /// A body part from a transport with backpressure: the transport reads no further until
    /// `ready` is called (at once, or once the handler's sink has room).
    func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void)
}

extension TransportResponseHandler {
    public func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) {
        didReceiveBody(data)
        ready()
    }
}

/// A started request.
public protocol TransportTask: Sendable {
    func cancel()
}

/// The narrow interface between the engine and an HTTP client library, so that a second
/// implementation (e.g. AsyncHTTPClient) can be added without touching the engine.
public protocol HTTPTransport: Sendable {
    func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask
    /// Whether reads wait for the handler (``TransportResponseHandler/didReceiveBody(_:ready:)``).
    /// Without it the engine bounds memory by asking for bounded ranges.
    var hasBackpressure: Bool { get }
    /// Executors the runner may run small jobs on, so that a job runs where its responses are
    /// delivered; empty (the default): every job on the cooperative pool.
    var jobExecutors: [any TaskExecutor] { get }
}

extension HTTPTransport {
    public var hasBackpressure: Bool { false }
    public var jobExecutors: [any TaskExecutor] { [] }
}
