import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers

/// Carries a response that URLSession cannot deliver faithfully over to a transport that can:
/// the engine has already accepted the head URLSession received, so this relay takes the same
/// request's response from the other transport, checks that its head says the same (status,
/// length, range, validators, encoding), and passes only its body and end to the engine's
/// handler. A head that differs (the file changed in between) ends the request as a connection
/// failure, which the engine retries like any other.
///
package final class ResponseHandoff: TransportResponseHandler, Sendable {
    private let handler: any TransportResponseHandler
    private let accepted: TransportResponseHead
    /// Why the second head is not the accepted one, once it came.
    private let mismatch = NIOLockedValueBox<String?>(nil)

    package init(handler: any TransportResponseHandler, accepted: TransportResponseHead) {
        self.handler = handler
        self.accepted = accepted
    }

    /// Bodies above this size (or of unknown size, answering a range request) need
    /// backpressure: URLSession could only cancel them and ask again.
    package static let largeBody: Int64 = 8 << 20

    /// Whether a response to `request` with this head must come from the hand-off transport.
    package static func needed(_ head: TransportResponseHead, request: TransportRequest) -> Bool {
        if let encoding = head.header("content-encoding")?.trimmingOWS().lowercased(),
           !encoding.isEmpty, encoding != "identity" {
            return true
        }
        guard head.status == 200 || head.status == 206 else { return false }
        if let length = ResponseHeaders.contentLength(head) { return length > largeBody }
        return request.asksRange
    }

    /// Headers that must be the same in both answers for the body to be the one accepted.
    private static let identifying = ["content-length", "content-range", "etag", "last-modified", "content-encoding"]

    package func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        let differs = head.status != accepted.status
            || Self.identifying.contains { head.header($0) != accepted.header($0) }
        guard differs else { return true }
        mismatch.withLockedValue { $0 = "the response changed when asked again (HTTP \(head.status))" }
        return false
    }

    package func didReceiveBody(_ data: Data) {
        handler.didReceiveBody(data)
    }

    package func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) {
        handler.didReceiveBody(data, ready: ready)
    }

    package func didComplete(_ failure: TransportFailure?) {
        if let mismatch = mismatch.withLockedValue({ $0 }) {
            handler.didComplete(.connection(mismatch))
        } else {
            handler.didComplete(failure)
        }
    }

    package var allowsShedding: Bool { handler.allowsShedding }
}
