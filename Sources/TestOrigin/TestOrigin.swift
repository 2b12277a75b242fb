import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A real HTTP/1.1 origin on loopback whose paths can be told to misbehave: the peer that
/// batchfetch's integration tests, demo and benchmarks download from.
///
/// Start one with ``start(host:port:)`` (port 0 picks a free one), add paths with ``serve(_:_:)``,
/// change them between requests with ``update(_:_:)`` or ``replace(_:with:)``, and read what was
/// served with ``bytesServed(_:)`` and ``requests(_:)``.
public final class TestOrigin: Sendable {
    /// A request as the origin saw it.
    public struct RecordedRequest: Sendable {
        public var method: String
        public var path: String
        /// The request target as sent: path and query.
        public var uri: String
        public var headers: [(String, String)]

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    let state: OriginState
    public let host: String
    public let port: Int

    private init(group: MultiThreadedEventLoopGroup, channel: Channel, state: OriginState, host: String) {
        self.group = group
        self.channel = channel
        self.state = state
        self.host = host
        self.port = channel.localAddress?.port ?? 0
    }

    /// Makes `path` take uploads (`PUT`, `POST`) as `receiver` says; `HEAD` then describes the
    /// last stored upload.
    public func receive(_ path: String, _ receiver: OriginReceiver = OriginReceiver()) {
        state.withLock { $0.receivers[path] = receiver }
    }

    /// Changes how `path` takes uploads (its faults, whether it holds its answers).
    public func updateReceiver(_ path: String, _ change: @Sendable (inout OriginReceiver) -> Void) {
        state.withLock { state in
            if var receiver = state.receivers[path] {
                change(&receiver)
                state.receivers[path] = receiver
            }
        }
    }

    /// Every upload request to `path` so far, complete or not, in order.
    public func uploads(_ path: String) -> [ReceivedUpload] {
        state.withLock { $0.uploads[path] ?? [] }
    }

    /// Binds and starts serving; port 0 picks a free port (read it from ``port``).
    public static func start(host: String = "127.0.0.1", port: Int = 0, threads: Int = 1) async throws -> TestOrigin {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let state = OriginState()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 512 * 1024, high: 2 * 1024 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(OriginHandler(state: state))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: host, port: port).get()
            return TestOrigin(group: group, channel: channel, state: state, host: host)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// `http://host:port` followed by `path`.
    public func url(_ path: String) -> String {
        "http://\(host):\(port)\(path)"
    }

    /// Makes every response head wait `delay` after its request arrived, like a server across a
    /// network with that round trip (this machine has no netem): the latency benchmark uses it,
    /// and it holds only the one response, not the connection's event loop.
    public func delayHeads(by delay: Duration) {
        state.withLock { $0.headDelay = delay }
    }

    /// Serves `file` at `path` (replacing whatever was there, counters kept).
    public func serve(_ path: String, _ file: OriginFile) {
        state.withLock { $0.files[path] = file }
    }

    /// Changes how `path` is served; the closure runs under the origin's lock.
    public func update(_ path: String, _ change: @Sendable (inout OriginFile) -> Void) {
        state.withLock { state in
            if var file = state.files[path] {
                change(&file)
                state.files[path] = file
            }
        }
    }

    /// Serves new content at `path` with a new ETag and Last-Modified, as when the remote file is
    /// rewritten.
    public func replace(_ path: String, with content: OriginContent) {
        update(path) { file in
            file.content = content
            file.version += 1
        }
    }

    public func remove(_ path: String) {
        state.withLock { $0.files[path] = nil }
    }

    /// Body bytes sent for `path` since the start (or the last ``resetCounters()``). Bytes of a
    /// response that began before the reset do not count: a killed client's connections keep
    /// draining (trickled responses go on) until the event loop sees them closed.
    public func bytesServed(_ path: String) -> Int64 {
        state.withLock { $0.bytesServed[path, default: 0] }
    }

    /// Requests for `path` that have arrived since the origin started, answered or still held
    /// (``OriginFile/held``): a test waits for one to know the client is waiting for its answer.
    public func arrivals(_ path: String) -> Int {
        state.withLock { $0.arrivals[path, default: 0] }
    }

    public func requests(_ path: String) -> [RecordedRequest] {
        state.withLock { $0.requests.filter { $0.path == path } }
    }

    public var allRequests: [RecordedRequest] {
        state.withLock { $0.requests }
    }

    /// Puts every file under one request quota (nil: none), counted from now.
    public func limitRequests(_ quota: OriginQuota?) {
        state.withLock { state in
            state.quota = quota
            state.quotaUsage = OriginQuota.Usage()
        }
    }

    /// Requests the quota refused with 429.
    public var refusedByQuota: Int {
        state.withLock { $0.quotaUsage.refused }
    }

    public func resetCounters() {
        state.withLock { state in
            state.bytesServed = [:]
            state.epoch += 1
            state.requests = []
            state.maxInFlight = state.inFlight
        }
    }

    /// Responses being sent now (a stalled one counts until its connection closes).
    public var responsesInFlight: Int {
        state.withLock { $0.inFlight }
    }

    /// The most responses that were being sent at the same time.
    public var maxResponsesInFlight: Int {
        state.withLock { $0.maxInFlight }
    }

    /// The most client connections that were open at the same time, busy or idle, since the
    /// origin started.
    public var maxConnectionsOpen: Int {
        state.withLock { $0.maxConnectionsOpen }
    }

    public func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

/// The origin's mutable state, shared by all connections.
final class OriginState: Sendable {
    struct Values {
        var files: [String: OriginFile] = [:]
        var bytesServed: [String: Int64] = [:]
        /// Counts ``TestOrigin/resetCounters()``; a response counts its bytes only in its own.
        var epoch = 0
        var requests: [TestOrigin.RecordedRequest] = []
        /// Requests per path as they arrive, before any hold (``TestOrigin/arrivals(_:)``).
        var arrivals: [String: Int] = [:]
        var inFlight = 0
        var maxInFlight = 0
        /// Client connections open now, and the most at once (since the start).
        var connectionsOpen = 0
        var maxConnectionsOpen = 0
        /// How long every response head waits, as a network's round trip would (see ``TestOrigin/delayHeads(by:)``).
        var headDelay: Duration = .zero
        var receivers: [String: OriginReceiver] = [:]
        var uploads: [String: [ReceivedUpload]] = [:]
        /// A request quota over all files, and what it used (``TestOrigin/limitRequests(_:)``).
        var quota: OriginQuota?
        var quotaUsage = OriginQuota.Usage()
    }

    /// How an upload request starts: its body is received, or it is answered at once.
    enum UploadStart {
        case receive(Receiving)
        case refuse(status: Int)
    }

    /// Records an upload request to a receiver path and consumes its fault; nil when the path
    /// takes no uploads (the request is answered as any other).
    func beginReceiving(method: String, path: String, uri: String, headers: [(String, String)]) -> UploadStart? {
        withLock { values in
            guard var receiver = values.receivers[path] else { return nil }
            values.requests.append(TestOrigin.RecordedRequest(method: method, path: path, uri: uri, headers: headers))
            let fault = receiver.faults.isEmpty ? nil : receiver.faults.removeFirst()
            values.receivers[path] = receiver
            if case .statusAtHead(let status)? = fault {
                values.uploads[path, default: []].append(
                    Receiving(path: path, method: method, headers: headers, uri: uri).received(complete: false))
                return .refuse(status: status)
            }
            return .receive(Receiving(path: path, method: method, headers: headers, uri: uri, fault: fault))
        }
    }

    /// Records what arrived; returns the answer for a complete body.
    @discardableResult
    func finishReceiving(_ receiving: Receiving, complete: Bool) -> (status: Int, headers: [(String, String)]) {
        withLock { values in
            var upload = receiving.received(complete: complete)
            let answer = receiving.response(values.receivers[receiving.path] ?? OriginReceiver(), stored: upload)
            upload.stored = complete && (200...299).contains(answer.status)
            values.uploads[receiving.path, default: []].append(upload)
            return answer
        }
    }

    private let values = NIOLockedValueBox(Values())

    func withLock<T>(_ body: (inout Values) throws -> T) rethrows -> T {
        try values.withLockedValue(body)
    }

    /// Records the request, consumes one fault, and decides the response.
    func respond(method: String, path: String, uri: String, headers: [(String, String)]) -> OriginResponse {
        withLock { values in
            values.requests.append(TestOrigin.RecordedRequest(method: method, path: path, uri: uri, headers: headers))
            if let receiver = values.receivers[path] {
                // What a store answers about an uploaded object: the last complete upload.
                let stored = values.uploads[path]?.last(where: \.stored)
                let (status, headers) = Receiving.head(receiver, stored: stored)
                return OriginResponse(status: status, headers: headers, body: 0..<0, fault: nil)
            }
            var fault: OriginFile.Fault?
            if var file = values.files[path], !file.faults.isEmpty {
                fault = file.faults.removeFirst()
                values.files[path] = file
            }
            if var file = values.files[path], let left = file.rangesHonoured,
               headers.contains(where: { $0.0.lowercased() == "range" }) {
                file.rangesHonoured = left - 1
                file.ignoresRange = left <= 0
                values.files[path] = file
            }
            if let quota = values.quota, values.files[path] != nil {
                let (admitted, quotaHeaders) = values.quotaUsage.admit(quota, at: .now)
                var response = OriginResponse.make(
                    for: values.files[path], method: method, uri: uri, requestHeaders: headers, fault: admitted ? fault : .status(429))
                response.headers += quotaHeaders
                return response
            }
            return OriginResponse.make(for: values.files[path], method: method, uri: uri, requestHeaders: headers, fault: fault)
        }
    }

    /// Body bytes the path may still serve before its ``OriginFile/pauseAfterServed`` gate
    /// holds it; nil when no gate is closed.
    func servedBudget(_ path: String) -> Int64? {
        withLock { values in
            guard let file = values.files[path], file.paused, let limit = file.pauseAfterServed else { return nil }
            return limit - values.bytesServed[path, default: 0]
        }
    }

    /// The offset no response for the path may send past while its ``OriginFile/pauseFrom``
    /// gate is closed; nil when it is open.
    func pausedFrom(_ path: String) -> Int64? {
        withLock { values in
            guard let file = values.files[path], file.paused else { return nil }
            return file.pauseFrom
        }
    }

    func content(_ path: String) -> OriginContent? {
        withLock { $0.files[path]?.content }
    }

    /// The bytes a response sending `body` of the path serves flipped, counting it against
    /// ``OriginFile/corruptResponses``; nil when none.
    func takeCorruption(_ path: String, sending body: Range<Int64>) -> Range<Int64>? {
        withLock { values in
            guard let file = values.files[path], file.corruptResponses > 0, let bad = file.corruptBytes, bad.overlaps(body) else { return nil }
            values.files[path]?.corruptResponses -= 1
            return bad
        }
    }

    func trickleRate(_ path: String) -> Int? {
        withLock { $0.files[path]?.trickleBytesPerSecond }
    }

    /// A response started or ended; keeps the highest number of responses in flight at once.
    func responseStarted() {
        withLock { values in
            values.inFlight += 1
            values.maxInFlight = max(values.maxInFlight, values.inFlight)
        }
    }

    func responseEnded() {
        withLock { $0.inFlight -= 1 }
    }

    var epoch: Int {
        withLock { $0.epoch }
    }

    /// Counts body bytes of a response begun in `epoch`; nothing when the counters were reset
    /// since.
    func countServed(_ path: String, _ bytes: Int64, epoch: Int) {
        withLock { values in
            if values.epoch == epoch { values.bytesServed[path, default: 0] += bytes }
        }
    }
}
