import BatchFetchFiles
import BatchFetchNetwork
import Foundation
import NIOConcurrencyHelpers

/// The transport handler of one upload request: keeps the response head and the first bytes of
/// its body (for an error message), and reports how the request ended. The request's body is
/// the ``UploadBody``; its progress touches ``watch`` so that a long upload is not idle.
final class UploadHandler: WatchedHandler, Sendable {
    struct Outcome: Sendable {
        var head: TransportResponseHead?
        var failure: TransportFailure?
        /// The start of the response body.
        var body: Data
    }

    /// How much of a response body is kept.
    static let bodyLimit = 2048

    let watch: RequestWatch<Outcome>
    /// The request's body, to tell an answer given before the server read it all.
    private let body: UploadBody
    private let state = NIOLockedValueBox((head: TransportResponseHead?.none, body: Data(), received: 0))

    /// `watch` is the one `body` reports its progress to (made first, as the body is).
    init(watch: RequestWatch<Outcome>, body: UploadBody) {
        self.watch = watch
        self.body = body
        watch.whenLost { [weak self] in self?.didComplete(.cancelled) }
    }

    /// How long an answer that refuses the upload before reading all of it (a 413, then a closed
    /// connection) may take to complete before the request is cancelled: AsyncHTTPClient
    /// otherwise waits for a body the server no longer reads until the idle timeout. An answer
    /// after the whole body is left alone: cancelling it then lost its end (see
    /// ``RequestWatch/whenLost(_:)``).
    static let earlyAnswerGrace: DispatchTimeInterval = .milliseconds(500)

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        state.withLockedValue { $0.head = head }
        watch.touch()
        guard !(200...299).contains(head.status) else { return true }
        if head.header("content-length") == "0" {
            endRefusal()
        } else if body.bytesSent < body.length {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.earlyAnswerGrace) { [watch] in
                watch.cancel()
            }
        }
        return true
    }

    func didReceiveBody(_ data: Data) {
        watch.touch()
        let whole = state.withLockedValue { state -> Bool in
            let room = Self.bodyLimit - state.body.count
            if room > 0 { state.body.append(data.prefix(room)) }
            state.received += data.count
            guard let head = state.head, !(200...299).contains(head.status),
                  let length = head.header("content-length").flatMap(Int.init) else { return false }
            return state.received >= length
        }
        if whole { endRefusal() }
    }

    /// Ends the request once a refusal (any answer but 2xx: a redirect, a 503, a 413) has
    /// arrived whole, without waiting for the transport to report it. AsyncHTTPClient, answered
    /// while it still finishes the request body's stream, closes the connection and waits for
    /// that stream to end before it reports the response's end; a race there left uploads
    /// answered 307 or 503 just after their last byte waiting a whole idle timeout (one run in
    /// fifteen under load). What comes next is decided by the head alone; the transfer is
    /// cancelled, its connection being closed anyway.
    private func endRefusal() {
        watch.complete { _ in
            state.withLockedValue { Outcome(head: $0.head, failure: nil, body: $0.body) }
        }
        watch.attachedTask?.cancel()
    }

    func didComplete(_ failure: TransportFailure?) {
        watch.complete { expired in
            state.withLockedValue { Outcome(head: $0.head, failure: expired ? .timedOut : failure, body: $0.body) }
        }
    }

    var allowsShedding: Bool { false }

    /// An interrupted run stops the upload at once: nothing local is at stake.
    func interrupt() {
        DispatchQueue.global().async { [watch] in watch.cancel() }
    }
}
