import Crypto
import Foundation

/// A path of the origin that takes uploads (`PUT` or `POST`), with switchable faults: the
/// receiving peer of the upload tests. Bodies are hashed and counted as they arrive, never held
/// whole (the first ``prefixLimit`` bytes are kept to inspect a form), so a test can send
/// gigabytes. After a complete upload the path answers `HEAD` with its size, an ETag made from
/// its sha256 and, with ``reprDigest``, a `Repr-Digest`.
public struct OriginReceiver: Sendable {
    public enum Fault: Sendable, Equatable {
        /// Close the connection once this many body bytes arrived, without an answer.
        case dropAfter(bytes: Int64)
        /// Read the body, then answer this status (with `Retry-After` when given).
        case status(Int, retryAfter: String? = nil)
        /// Answer this status as soon as the request head arrives, without reading the body, and
        /// close the connection (nginx's 413 for a body over `client_max_body_size`).
        case statusAtHead(Int)
        /// Read the body, then redirect (`{uri}` in the location is the request target).
        case redirect(to: String, status: Int)
    }

    /// Consumed one per upload request, in order.
    public var faults: [Fault] = []
    /// Answer `HEAD` and uploads with `Repr-Digest: sha-256=…` of the stored body.
    public var reprDigest = false
    /// Answer uploads with this `Repr-Digest` instead of the stored body's (a lying store).
    public var wrongReprDigest: String?
    /// Answer uploads without an ETag (as nginx's WebDAV does); `HEAD` still has one.
    public var omitsETagOnUpload = false
    /// A whole body that arrived waits for its answer while this is true (see
    /// ``TestOrigin/updateReceiver(_:_:)``): the upload stays in flight until the test lets it go.
    public var held = false

    public static let prefixLimit = 4 << 20

    public init(faults: [Fault] = []) {
        self.faults = faults
    }
}

/// One upload as the origin received it.
public struct ReceivedUpload: Sendable {
    public var method: String
    public var headers: [(String, String)]
    /// Body bytes received.
    public var bytes: Int64
    /// sha256 (hex) of the body.
    public var sha256: String
    /// The first ``OriginReceiver/prefixLimit`` bytes of the body.
    public var prefix: [UInt8]
    /// Whether the whole body arrived and was answered.
    public var complete: Bool
    /// Whether it was answered 2xx: what `HEAD` then describes.
    public var stored = false

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// The state of one body being received.
struct Receiving {
    var path: String
    var method: String
    var headers: [(String, String)]
    var uri: String
    var hasher = SHA256()
    var bytes: Int64 = 0
    var prefix: [UInt8] = []
    var fault: OriginReceiver.Fault?

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
        self.bytes += Int64(bytes.count)
        let room = OriginReceiver.prefixLimit - prefix.count
        if room > 0 { prefix.append(contentsOf: bytes.prefix(room)) }
    }

    /// The drop point of a `dropAfter` fault.
    var dropAt: Int64? {
        if case .dropAfter(let bytes)? = fault { return bytes }
        return nil
    }

    func received(complete: Bool) -> ReceivedUpload {
        ReceivedUpload(method: method, headers: headers, bytes: bytes, sha256: Self.hex(hasher.finalize()), prefix: prefix,
                       complete: complete)
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The answer once the body is complete: the fault's, or 201 with the stored object's
    /// validators.
    func response(_ receiver: OriginReceiver, stored: ReceivedUpload) -> (status: Int, headers: [(String, String)]) {
        switch fault {
        case .status(let status, let retryAfter)?:
            return (status, [("Content-Length", "0")] + (retryAfter.map { [("Retry-After", $0)] } ?? []))
        case .redirect(let location, let status)?:
            return (status, [("Location", location.replacingOccurrences(of: "{uri}", with: uri)), ("Content-Length", "0")])
        default:
            var headers = [("Content-Length", "0")]
            if !receiver.omitsETagOnUpload { headers.append(("ETag", Self.etag(stored))) }
            if let wrong = receiver.wrongReprDigest {
                headers.append(("Repr-Digest", wrong))
            } else if receiver.reprDigest {
                headers.append(("Repr-Digest", Self.reprDigest(stored)))
            }
            return (201, headers)
        }
    }

    /// What `HEAD` on a receiver path answers: the last complete upload's size and validators.
    static func head(_ receiver: OriginReceiver, stored: ReceivedUpload?) -> (status: Int, headers: [(String, String)]) {
        guard let stored else { return (404, [("Content-Length", "0")]) }
        var headers = [("Content-Length", "\(stored.bytes)"), ("ETag", etag(stored))]
        if receiver.reprDigest { headers.append(("Repr-Digest", reprDigest(stored))) }
        return (200, headers)
    }

    static func etag(_ stored: ReceivedUpload) -> String {
        "\"" + stored.sha256.prefix(16) + "\""
    }

    static func reprDigest(_ stored: ReceivedUpload) -> String {
        var bytes: [UInt8] = []
        var index = stored.sha256.startIndex
        while index < stored.sha256.endIndex {
            let next = stored.sha256.index(index, offsetBy: 2)
            bytes.append(UInt8(stored.sha256[index..<next], radix: 16)!)
            index = next
        }
        return "sha-256=:\(Data(bytes).base64EncodedString()):"
    }
}
