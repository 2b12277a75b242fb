import AsyncHTTPClient
import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The HTTP transport on SwiftNIO (AsyncHTTPClient): clients that live for the process (one per
/// event loop and proxy, never shut down); redirects and decompression off (the engine follows
/// redirects itself and needs the bytes of the file); HTTP/1.1 connections per host at most
/// `per_host` in all (HTTP/2 where TLS negotiates it: one connection per lane);
/// `http_proxy`, `https_proxy` and `no_proxy` honoured as curl and URLSession do — except that
/// AsyncHTTPClient reaches every origin through a proxy with CONNECT, also for http:// URLs,
/// which proxies that allow CONNECT only to port 443 refuse.
///
/// A failed connection fails its request at once (no retrying inside the pool): a refused
/// connection or a failed TLS handshake is reported as itself, not as the idle timeout it would
/// otherwise turn into. TLS failures are ``TransportFailure/tls(_:)``.
///
/// Unlike URLSession it has backpressure: the response delegate returns a future per body part,
/// and the transport hands the handler a `ready` callback that completes it, so reads stop while
/// the sink is full. The engine then streams whole bodies (no bounded ranges, no cancels to shed
/// load), which makes a large download on loopback much faster (bench/results/nio-probe.md).
///
/// Lanes: each event loop of the group has its own client (per proxy), and a request goes out on
/// the lane of the loop its job runs on (``jobExecutors``), so that the job, the connection and
/// the response's delegate share one thread. `per_host` is split between the lanes
/// (``laneShare(_:)``) and a request takes a lane with room for its host, its own first: the
/// clients together never open more than `per_host` connections to a host.
package final class AsyncHTTPClientTransport: HTTPTransport, Sendable {
    private let maximumConnectionsPerHost: Int
    private let proxies: ProxySettings
    /// The TLS trust and client certificate; nil for the system's.
    private let tls: TLSOptions?
    /// One client per proxy (nil: direct) and lane, made on first use and kept for the process.
    private let clients = NIOLockedValueBox([ClientKey: HTTPClient]())
    /// Requests in flight per host, one count per lane.
    private let inFlight = NIOLockedValueBox([String: [Int]]())
    private let lanes = EventLoopTaskExecutor.all

    private struct ClientKey: Hashable {
        var proxy: ProxySettings.Proxy?
        var lane: Int
    }

    private struct Key: Hashable {
        var perHost: Int
        var tls: TLSOptions?
    }

    /// The process's transports, by `per_host` and TLS options.
    private static let transports = NIOLockedValueBox([Key: AsyncHTTPClientTransport]())

    /// The process's transport for a `per_host` limit and TLS options, with the proxies of the
    /// environment.
    package static func shared(maximumConnectionsPerHost: Int, tls: TLSOptions? = nil) -> AsyncHTTPClientTransport {
        transports.withLockedValue { transports in
            let key = Key(perHost: maximumConnectionsPerHost, tls: tls)
            if let existing = transports[key] { return existing }
            let transport = AsyncHTTPClientTransport(
                maximumConnectionsPerHost: maximumConnectionsPerHost,
                proxies: ProxySettings(environment: ProcessInfo.processInfo.environment), tls: tls)
            transports[key] = transport
            return transport
        }
    }

    /// A transport of its own; its clients live as long as the process.
    package init(maximumConnectionsPerHost: Int, proxies: ProxySettings, tls: TLSOptions? = nil) {
        self.maximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        self.proxies = proxies
        self.tls = tls
    }

    /// The lanes' executors: a job that runs on one sends its requests on that lane.
    package var jobExecutors: [any TaskExecutor] { lanes }

    /// The connections per host lane `lane` may open: `per_host` split evenly, the first lanes
    /// taking the remainder (0 for the last lanes when `per_host` is below the number of lanes).
    package func laneShare(_ lane: Int) -> Int {
        maximumConnectionsPerHost / lanes.count + (lane < maximumConnectionsPerHost % lanes.count ? 1 : 0)
    }

    /// Picks the lane for a request to `host` and counts it in flight: the caller's own loop's
    /// when its share has room, else the lane with the most room. When none has room (more
    /// requests than `per_host` at once: runs that share this transport, each within its own
    /// limit), the first lane, whose client queues the request.
    package func takeLane(for host: String) -> Int {
        let current = MultiThreadedEventLoopGroup.currentEventLoop.map(ObjectIdentifier.init)
        let own = lanes.firstIndex { ObjectIdentifier($0.loop) == current }
        return inFlight.withLockedValue { inFlight in
            var counts = inFlight[host] ?? [Int](repeating: 0, count: lanes.count)
            let room = lanes.indices.map { laneShare($0) - counts[$0] }
            let lane: Int
            if let own, room[own] > 0 {
                lane = own
            } else if let most = room.indices.max(by: { room[$0] < room[$1] }), room[most] > 0 {
                lane = most
            } else {
                lane = 0
            }
            counts[lane] += 1
            inFlight[host] = counts
            return lane
        }
    }

    /// The request on `lane` to `host` ended.
    package func releaseLane(_ lane: Int, for host: String) {
        inFlight.withLockedValue { inFlight in
            guard var counts = inFlight[host] else { return }
            counts[lane] -= 1
            inFlight[host] = counts.allSatisfy { $0 == 0 } ? nil : counts
        }
    }

    private func client(for url: URL, lane: Int) throws(TLSLoadError) -> HTTPClient {
        let key = ClientKey(proxy: proxies.proxy(for: url), lane: lane)
        let found = clients.withLockedValue { clients -> Result<HTTPClient, TLSLoadError> in
            if let client = clients[key] { return .success(client) }
            do throws(TLSLoadError) {
                let client = try makeClient(key)
                clients[key] = client
                return .success(client)
            } catch {
                return .failure(error)
            }
        }
        return try found.get()
    }

    /// A client for a proxy and lane, with the transport's TLS options.
    private func makeClient(_ key: ClientKey) throws(TLSLoadError) -> HTTPClient {
        let proxy = key.proxy
        let lane = key.lane
        // Loaded when the client is made: a file fixed later takes a new process.
        let tlsConfiguration = try tls?.configuration()
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tlsConfiguration,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30)),
            connectionPool: .init(idleTimeout: .seconds(60),
                                  concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, laneShare(lane))),
            proxy: proxy.map { proxy in
                .server(host: proxy.host, port: proxy.port,
                        authorization: proxy.credentials.map { .basic(credentials: Data($0.utf8).base64EncodedString()) })
            },
            decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        // HTTP/1.1 only, also where the server offers h2: AsyncHTTPClient gives every HTTP/2
        // stream an 8 MiB receive window of its own (`HTTP2Connection`, not configurable), which
        // the server fills whatever the sink's backpressure says, so `segments: 4` over one h2
        // connection held 30+ MiB beyond the bound (70–120 MiB peak RSS against nginx and caddy,
        // issue 33). On HTTP/1.1 a paused read stops at the socket. Segments also need several
        // connections to help against a mirror that caps each one, and `per_host` counts
        // connections.
        configuration.httpVersion = .http1Only
        // No tracing: the default (a no-op tracer) still made a span and its attributes per
        // request (bench/results/profile.md, "Choices the code cites").
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .shared(lanes[lane].loop), configuration: configuration)
    }

    package var hasBackpressure: Bool { true }

    package func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask {
        let host = request.url.host ?? ""
        let lane = takeLane(for: host)
        let delegate = Delegate(handler: handler) { [self] in releaseLane(lane, for: host) }
        do {
            var headers = HTTPHeaders(request.headers.map { ($0.name, $0.value) })
            headers.replaceOrAdd(name: "Accept-Encoding", value: "identity")
            let client = try client(for: request.url, lane: lane)
            let outgoing = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method), headers: headers,
                body: request.upload.map { Self.stream($0, on: client.eventLoopGroup) } ?? request.body.map { .bytes($0) })
            let task = client.execute(request: outgoing, delegate: delegate)
            return Task(task: task)
        } catch let error as TLSLoadError {
            delegate.complete(.tls(error.description))
            return Task(task: nil)
        } catch {
            delegate.complete(.other("\(error)"))
            return Task(task: nil)
        }
    }

    /// An upload's file as a body of known length, each block written once the connection took
    /// the one before (backpressure: at most two blocks in memory).
    private static func stream(_ upload: UploadBody, on group: any EventLoopGroup) -> HTTPClient.Body {
        .stream(contentLength: upload.length) { writer in
            upload.stream(on: group.any()) { writer.write(.byteBuffer($0)) }
        }
    }

    private struct Task: TransportTask {
        let task: HTTPClient.Task<Void>?

        func cancel() {
            task?.cancel()
        }
    }

    /// Forwards one response to the engine's handler, exactly one completion per request.
    private final class Delegate: HTTPClientResponseDelegate, Sendable {
        typealias Response = Void

        private let handler: any TransportResponseHandler
        /// Gives the request's lane back, before the handler hears of the end.
        private let ended: @Sendable () -> Void
        /// Whether the end was reported, and whether the head's body is wanted.
        private let state = NIOLockedValueBox((completed: false, accepted: true))

        init(handler: any TransportResponseHandler, ended: @escaping @Sendable () -> Void) {
            self.handler = handler
            self.ended = ended
        }

        func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            var headers = [String: String](minimumCapacity: head.headers.count)
            for header in head.headers {
                let name = header.name.lowercased()
                if headers[name] == nil { headers[name] = header.value }
            }
            if !handler.didReceiveHead(TransportResponseHead(status: Int(head.status.code), headers: headers)) {
                state.withLockedValue { $0.accepted = false }
                task.cancel()
            }
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            guard state.withLockedValue({ $0.accepted }) else { return task.eventLoop.makeSucceededVoidFuture() }
            let promise = task.eventLoop.makePromise(of: Void.self)
            handler.didReceiveBody(Data(buffer.readableBytesView)) { promise.succeed(()) }
            return promise.futureResult
        }

        func didFinishRequest(task: HTTPClient.Task<Void>) throws {
            complete(nil)
        }

        func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
            complete(Self.failure(error))
        }

        func complete(_ failure: TransportFailure?) {
            let first = state.withLockedValue { state in
                defer { state.completed = true }
                return !state.completed
            }
            if first {
                ended()
                handler.didComplete(failure)
            }
        }

        static func failure(_ error: any Error) -> TransportFailure {
            if let tls = tlsFailure(error) { return .tls(tls) }
            if let error = error as? HTTPClientError {
                switch error {
                case .cancelled: return .cancelled
                case .readTimeout, .connectTimeout, .deadlineExceeded: return .timedOut
                case .remoteConnectionClosed: return .connection("the server closed the connection")
                default: return .connection("\(error)")
                }
            }
            return .connection("\(error)")
        }

        /// A message for a failed TLS handshake or certificate check, nil for other errors.
        static func tlsFailure(_ error: any Error) -> String? {
            switch error {
            case let error as NIOSSLExtraError where error == .failedToValidateHostname:
                return "the server's certificate does not match the host name"
            case let error as NIOSSLExtraError:
                return "TLS: \(error)"
            case NIOSSLError.handshakeFailed(let reason):
                let text = "\(reason)"
                if text.contains("CERTIFICATE_VERIFY_FAILED") {
                    return "the server's certificate is not trusted (\(text)); see 'tls: ca_file' for a private CA"
                }
                return "TLS handshake failed: \(text)"
            case let error as NIOSSLError:
                return "TLS: \(error)"
            case let error as BoringSSLError:
                return "TLS: \(error)"
            default:
                return nil
            }
        }
    }
}
