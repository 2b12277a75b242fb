import NIOCore
import NIOHTTP1

/// Serves one connection: reads a request, asks ``OriginState`` what to answer, and streams the
/// body with the configured faults (drop, stall, trickle), honouring channel writability so a
/// slow client never makes the origin buffer a whole file.
final class OriginHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A body being sent.
    private struct Transfer {
        var path: String
        var content: OriginContent
        var offset: Int64
        var end: Int64
        var dropAt: Int64?
        var stall: (at: Int64, seconds: Double)?
        var pauseAt: Int64?
        /// Bytes this response sends flipped (``OriginFile/corruptBytes``).
        var corrupt: Range<Int64>?
        var bytesPerSecond: Int?
        /// When the paced body began and how much of it went out since: a paced body never gets
        /// ahead of `bytesPerSecond` × the time since it began (plus 10 ms' worth).
        var pacingSince = NIODeadline.now()
        var paced: Int64 = 0
        var closeWhenDone: Bool
        /// The origin's counter epoch when the response began.
        var epoch: Int
    }

    private let state: OriginState
    private var requestHead: HTTPRequestHead?
    /// An upload body being received (a ``OriginReceiver`` path).
    private var receiving: Receiving?
    /// The rest of this request is ignored: it was answered at its head.
    private var discarding = false
    private var transfer: Transfer?
    private var waitingForTimer = false
    /// Whether a response is being sent (counted in the origin's in-flight figure).
    private var responding = false
    private static let chunkSize: Int64 = 256 * 1024

    init(state: OriginState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
            guard head.method == .PUT || head.method == .POST else { return }
            let (path, uri) = Self.target(head)
            switch state.beginReceiving(method: head.method.rawValue, path: path, uri: uri, headers: head.headers.map { ($0.name, $0.value) }) {
            case .receive(let receiving)?:
                self.receiving = receiving
            case .refuse(let status)?:
                requestHead = nil
                discarding = true
                var headers = HTTPHeaders([("Content-Length", "0"), ("Connection", "close")])
                headers.replaceOrAdd(name: "Connection", value: "close")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers))),
                              promise: nil)
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
            case nil:
                break
            }
        case .body(let buffer):
            guard var receiving else { return }
            buffer.withUnsafeReadableBytes { receiving.append($0) }
            if let dropAt = receiving.dropAt, receiving.bytes >= dropAt {
                state.finishReceiving(receiving, complete: false)
                self.receiving = nil
                requestHead = nil
                discarding = true
                context.close(promise: nil)
                return
            }
            self.receiving = receiving
        case .end:
            if discarding {
                discarding = false
                return
            }
            guard let head = requestHead else { return }
            requestHead = nil
            if let receiving {
                self.receiving = nil
                let state = state
                afterHold({ state.withLock { $0.receivers[receiving.path]?.held ?? false } }, context: context) { handler, context in
                    let (status, headers) = state.finishReceiving(receiving, complete: true)
                    context.write(handler.wrapOutboundOut(.head(HTTPResponseHead(
                        version: head.version, status: .init(statusCode: status), headers: HTTPHeaders(headers)))), promise: nil)
                    handler.finish(context: context, close: !head.isKeepAlive)
                }
                return
            }
            let path = Self.target(head).path, state = state
            state.withLock { $0.arrivals[path, default: 0] += 1 }
            afterHold({ state.withLock { $0.files[path]?.held ?? false } }, context: context) { handler, context in
                handler.answer(head, context: context)
            }
        }
    }

    /// Runs `answer` once `held` says no more (looking again every 5 ms): a path a test holds
    /// (``OriginFile/held``, ``OriginReceiver/held``) is answered when the test lets it go.
    private func afterHold(_ held: @escaping () -> Bool, context: ChannelHandlerContext,
                           _ answer: @escaping (OriginHandler, ChannelHandlerContext) -> Void) {
        guard held() else { return answer(self, context) }
        let bound = NIOLoopBound((self, context, held, answer), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(5)) {
            let (handler, context, held, answer) = bound.value
            handler.afterHold(held, context: context, answer)
        }
    }

    /// Answers a request for a file, after the origin's head delay.
    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let delay = state.withLock { $0.headDelay }
        guard delay > .zero else { return respond(to: head, context: context) }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
            let (handler, context) = bound.value
            handler.respond(to: head, context: context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        state.withLock { values in
            values.connectionsOpen += 1
            values.maxConnectionsOpen = max(values.maxConnectionsOpen, values.connectionsOpen)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        transfer = nil
        endResponse()
        state.withLock { $0.connectionsOpen -= 1 }
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    /// The path and the target of a request. An absolute URI is a request to a forward proxy
    /// (`http_proxy`): its path is served, so the origin can stand in for a proxy in tests.
    private static func target(_ head: HTTPRequestHead) -> (path: String, uri: String) {
        var target = Substring(head.uri)
        if let scheme = target.range(of: "://") {
            target = target[scheme.upperBound...]
            target = target.firstIndex(of: "/").map { target[$0...] } ?? "/"
        }
        return (String(target.split(separator: "?", maxSplits: 1).first ?? ""), String(target))
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (path, uri) = Self.target(head)
        let requestHeaders = head.headers.map { ($0.name, $0.value) }
        let response = state.respond(method: head.method.rawValue, path: path, uri: uri, headers: requestHeaders)
        responding = true
        state.responseStarted()
        var headers = HTTPHeaders(response.headers)
        let mismatchedLength = response.headers.contains { $0.0 == "Content-Length" && Int64($0.1) != Int64(response.body.count) }
            && head.method != .HEAD
        let close = !head.isKeepAlive || mismatchedLength
        if close { headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: response.status), headers: headers))),
            promise: nil)
        guard !response.body.isEmpty, let content = state.content(path) else {
            finish(context: context, close: close)
            return
        }
        var transfer = Transfer(
            path: path, content: content, offset: response.body.lowerBound, end: response.body.upperBound,
            bytesPerSecond: state.trickleRate(path), closeWhenDone: close, epoch: state.epoch)
        transfer.corrupt = state.takeCorruption(path, sending: response.body)
        switch response.fault {
        case .drop(let after)?: transfer.dropAt = response.body.lowerBound + after
        case .stall(let after, let seconds)?: transfer.stall = (response.body.lowerBound + after, seconds)
        case .pause(let after)?: transfer.pauseAt = response.body.lowerBound + after
        default: break
        }
        self.transfer = transfer
        pump(context: context)
    }

    /// Writes body chunks while the channel accepts them; resumes on writability or a timer.
    private func pump(context: ChannelHandlerContext) {
        guard var transfer, !waitingForTimer else { return }
        defer { context.flush() }
        while context.channel.isWritable {
            var limit = transfer.end
            if let dropAt = transfer.dropAt { limit = min(limit, dropAt) }
            if let stall = transfer.stall { limit = min(limit, stall.at) }
            if let pauseAt = transfer.pauseAt { limit = min(limit, pauseAt) }
            if let budget = state.servedBudget(transfer.path) {
                guard budget > 0 else {
                    let path = transfer.path, state = state
                    return pump(after: { (state.servedBudget(path) ?? 1) <= 0 }, context: context)
                }
                limit = min(limit, transfer.offset + budget)
            }
            if let gate = state.pausedFrom(transfer.path), transfer.offset < transfer.end {
                guard transfer.offset < gate else {
                    let path = transfer.path, state = state
                    return pump(after: { state.pausedFrom(path) != nil }, context: context)
                }
                limit = min(limit, gate)
            }
            var count = min(Self.chunkSize, limit - transfer.offset)
            if let rate = transfer.bytesPerSecond {
                let elapsed = Double((NIODeadline.now() - transfer.pacingSince).nanoseconds) / 1e9
                let allowed = Int64(Double(rate) * (elapsed + 0.01)) - transfer.paced
                // Sent in pieces of at least 16 KiB (or 5 ms' worth): writing whatever a few
                // microseconds allowed kept the event loop busy, its other connections waiting.
                let least = min(count, max(16 << 10, Int64(rate / 200)))
                guard allowed >= least else {
                    resume(after: min(0.05, max(0.002, Double(least - allowed) / Double(rate))), context: context)
                    return
                }
                count = min(count, allowed)
            }
            if count > 0 {
                var bytes = transfer.content.bytes(in: transfer.offset..<transfer.offset + count)
                if let bad = transfer.corrupt?.clamped(to: transfer.offset..<transfer.offset + count), !bad.isEmpty {
                    for offset in bad { bytes[Int(offset - transfer.offset)] ^= 0xFF }
                }
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
                transfer.offset += count
                transfer.paced += count
                state.countServed(transfer.path, count, epoch: transfer.epoch)
                self.transfer = transfer
            }
            if let dropAt = transfer.dropAt, transfer.offset >= dropAt {
                self.transfer = nil
                endResponse()
                // Closed once the bytes written so far have left: a close with writes still
                // pending discards them, and bytes counted as served never reached the client
                // (it then fetched them again, and the count came out over the file's size).
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer())))).whenComplete { _ in
                    bound.value.close(promise: nil)
                }
                return
            }
            if let stall = transfer.stall, transfer.offset >= stall.at {
                transfer.stall = nil
                self.transfer = transfer
                resume(after: stall.seconds, context: context)
                return
            }
            if let pauseAt = transfer.pauseAt, transfer.offset >= pauseAt {
                transfer.pauseAt = nil
                self.transfer = transfer
                let path = transfer.path, state = state
                return pump(after: { state.withLock { $0.files[path]?.paused ?? false } }, context: context)
            }
            if transfer.offset >= transfer.end {
                self.transfer = nil
                finish(context: context, close: transfer.closeWhenDone)
                return
            }
        }
    }

    /// Goes on writing the body once `held` turns false (a test's gate), sending nothing until then.
    private func pump(after held: @escaping () -> Bool, context: ChannelHandlerContext) {
        waitingForTimer = true
        afterHold(held, context: context) { handler, context in
            handler.waitingForTimer = false
            handler.pump(context: context)
        }
    }

    private func resume(after seconds: Double, context: ChannelHandlerContext) {
        waitingForTimer = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
            let (handler, context) = bound.value
            handler.waitingForTimer = false
            handler.pump(context: context)
        }
    }

    private func endResponse() {
        if responding {
            responding = false
            state.responseEnded()
        }
    }

    private func finish(context: ChannelHandlerContext, close: Bool) {
        endResponse()
        let future = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            future.whenComplete { _ in bound.value.close(promise: nil) }
        }
    }
}
