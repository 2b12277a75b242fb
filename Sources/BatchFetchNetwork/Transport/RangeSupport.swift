import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers

/// What each origin has shown about range requests, learnt from its answers, so that
/// ``URLSessionTransport`` sends a range request itself only to an origin known to honour ranges.
///
/// Why: URLSession cannot pause a body, and a server without Range support (`python3 -m
/// http.server`) answers a bounded range with the whole file. Such a body is handed over to the
/// AsyncHTTPClient transport at its head (``ResponseHandoff``), but the URLSession transfer it
/// came on keeps reading until its cancel takes effect, and with other transfers busy on the
/// process's one delivery queue that took long enough for 50–300 MB to queue up in memory (a
/// 300 MB file beside five small ones peaked at 115–380 MiB; issue 33). A range request to an
/// origin that has not yet answered one with a 206 (or announced `Accept-Ranges: bytes`) goes
/// to the transport with backpressure instead; once the origin has proved itself, its range
/// requests use URLSession. An origin that once answered a range request with 200 stays on the
/// other transport for range requests.
package final class RangeSupport: Sendable {
    package enum Verdict: Sendable, Equatable {
        case honours
        case ignores
    }

    private let verdicts = NIOLockedValueBox([Origin: Verdict]())

    /// Whether URLSession may carry a range request to `origin`.
    package func honoured(by origin: Origin) -> Bool {
        verdicts.withLockedValue { $0[origin] } == .honours
    }

    /// Learns from the head of a response to a request for `url` that did (or did not) ask for a
    /// range. Called for every response: most say nothing, and cost no origin and no lock.
    package func learn(from head: TransportResponseHead, url: URL, askedRange: Bool) {
        guard let verdict = Self.verdict(head, askedRange: askedRange), let origin = Origin(url) else { return }
        verdicts.withLockedValue { verdicts in
            // Ignoring ranges once is enough to be kept away from URLSession for good.
            if verdicts[origin] != .ignores { verdicts[origin] = verdict }
        }
    }

    /// What a head says of its origin's range support, when it says anything.
    package static func verdict(_ head: TransportResponseHead, askedRange: Bool) -> Verdict? {
        if askedRange && head.status == 206 { return .honours }
        if askedRange && head.status == 200 { return .ignores }
        guard (200...299).contains(head.status), let accepts = head.header("accept-ranges") else { return nil }
        let bytes = accepts == "bytes"
            || accepts.lowercased().split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "bytes" }
        return bytes ? .honours : nil
    }

    /// A handler that learns from the head it relays, for requests sent on the other transport.
    package func learning(for url: URL, askedRange: Bool, _ handler: any TransportResponseHandler) -> any TransportResponseHandler {
        Learner(support: self, url: url, askedRange: askedRange, handler: handler)
    }

    /// Relays every call to the engine's handler, learning from the head on the way.
    private final class Learner: TransportResponseHandler, Sendable {
        let support: RangeSupport
        let url: URL
        let askedRange: Bool
        let handler: any TransportResponseHandler

        init(support: RangeSupport, url: URL, askedRange: Bool, handler: any TransportResponseHandler) {
            self.support = support
            self.url = url
            self.askedRange = askedRange
            self.handler = handler
        }

        func didReceiveHead(_ head: TransportResponseHead) -> Bool {
            support.learn(from: head, url: url, askedRange: askedRange)
            return handler.didReceiveHead(head)
        }

        func didReceiveBody(_ data: Data) {
            handler.didReceiveBody(data)
        }

        func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) {
            handler.didReceiveBody(data, ready: ready)
        }

        func didComplete(_ failure: TransportFailure?) {
            handler.didComplete(failure)
        }

        var allowsShedding: Bool { handler.allowsShedding }
    }
}
