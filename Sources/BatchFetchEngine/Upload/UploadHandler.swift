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
    private let state = NIOLockedValueBox((head: TransportResponseHead?.none, body: Data()))

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
        if !(200...299).contains(head.status), body.bytesSent < body.length {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.earlyAnswerGrace) { [watch] in
                watch.cancel()
            }
        }
        return true
    }

    func didReceiveBody(_ data: Data) {
        watch.touch()
        state.withLockedValue { state in
            let room = Self.bodyLimit - state.body.count
            if room > 0 { state.body.append(data.prefix(room)) }
        }
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
