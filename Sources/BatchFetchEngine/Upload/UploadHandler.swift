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

    let watch = RequestWatch<Outcome>()
    private let state = NIOLockedValueBox((head: TransportResponseHead?.none, body: Data()))

    /// How long an answer that refuses the upload (a 413 sent before the body was read, then the
    /// connection closed) may take to complete before the request is cancelled: AsyncHTTPClient
    /// otherwise waits for a body the server no longer reads until the idle timeout.
    static let earlyAnswerGrace: DispatchTimeInterval = .milliseconds(500)

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        state.withLockedValue { $0.head = head }
        watch.touch()
        if !(200...299).contains(head.status) {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.earlyAnswerGrace) { [watch] in
                watch.runningTask?.cancel()
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
        guard let task = watch.runningTask else { return }
        DispatchQueue.global().async { task.cancel() }
    }
}
