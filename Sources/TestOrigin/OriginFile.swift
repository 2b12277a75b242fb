import Foundation

/// One path served by ``TestOrigin`` and how the origin misbehaves for it.
public struct OriginFile: Sendable {
    /// A fault applied to one request; queued faults are consumed one per request, in order.
    public enum Fault: Sendable, Equatable {
        /// No fault for this request (to aim the next fault at a later request).
        case pass
        /// Send the head and this many body bytes, then close the connection.
        case drop(afterBytes: Int64)
        /// Send this many body bytes, then go silent (connection open) for `seconds`, then go on.
        case stall(afterBytes: Int64, seconds: Double)
        /// Send this many body bytes, then go silent (connection open) while ``OriginFile/paused``
        /// is true, then go on: a test does something mid-body, however loaded the machine.
        case pause(afterBytes: Int64)
        /// Answer with this status and an optional `Retry-After` value, no content.
        case status(Int, retryAfter: String? = nil)
    }

    public enum Validators: Sendable, Equatable {
        /// Strong ETag and Last-Modified (the default).
        case strong
        /// A weak ETag (`W/"..."`) only, which cannot validate a range.
        case weakETag
        /// Last-Modified only.
        case lastModifiedOnly
        /// Neither.
        case none
    }

    public var content: OriginContent
    /// Bumped by ``TestOrigin/replace(_:with:)``; part of the ETag and Last-Modified.
    public var version = 0
    public var validators = Validators.strong
    /// Whether Range requests are honoured (and `Accept-Ranges: bytes` sent).
    public var acceptsRanges = true
    /// Answer Range requests with 200 and the whole body, as if ranges were not understood.
    public var ignoresRange = false
    /// Serve ranges whatever `If-Range` says, as busybox httpd and twisted.web do: a resume then
    /// gets bytes of the current file even when it changed.
    public var ignoresIfRange = false
    /// Requests for the path wait, unanswered, while this is true: a test holds a job in flight
    /// until it has done what it must do mid-run, then clears it with ``TestOrigin/update(_:_:)``
    /// (no race with the client's progress, however loaded the machine).
    public var held = false
    /// A body with a ``Fault/pause(afterBytes:)`` waits there while this is true.
    public var paused = false
    /// While ``paused`` is true, no response for the path sends more once this many of its body
    /// bytes were served, over all requests: a test stops a download part-way whatever ranges
    /// the client asks for and however loaded the machine (a trickle alone let a download finish
    /// between two looks of a starved test).
    public var pauseAfterServed: Int64?
    /// While ``paused`` is true, no response for the path sends the bytes at or past this offset
    /// of the file: every range below it completes, every range above it waits (a test holds a
    /// segmented download's later pieces, whichever connection asks for them).
    public var pauseFrom: Int64?
    /// Honour only this many Range requests; later ones get 200 and the whole body, like a
    /// server (or a proxy in front of it) that stops honouring ranges mid-way.
    public var rangesHonoured: Int?
    /// Faults for the next requests, consumed in order.
    public var faults: [Fault] = []
    /// Serve these bytes of the file flipped (each XOR 0xFF) to the next ``corruptResponses``
    /// responses that send any of them: a mirror that serves one bad piece.
    public var corruptBytes: Range<Int64>?
    public var corruptResponses = 0
    /// Send the body no faster than this many bytes per second.
    public var trickleBytesPerSecond: Int?
    /// Declare a Content-Length this many bytes off the real length (then close after sending).
    public var contentLengthError: Int64 = 0
    /// Answer every request with this status (e.g. 403, 404, 500) and no content.
    public var fixedStatus: Int?
    /// Redirect to this location (absolute URL or path) with `redirectStatus`; `{uri}` in it is
    /// replaced by the request target (path and query), as servers that echo it do.
    public var redirectTo: String?
    public var redirectStatus = 302
    /// Send no Content-Length (the body goes chunked).
    public var omitsContentLength = false
    /// Refuse HEAD with 405.
    public var refusesHead = false
    /// Extra response headers (e.g. `Content-Digest`), also on a ``fixedStatus`` answer (e.g.
    /// `WWW-Authenticate` on a 401).
    public var extraHeaders: [(String, String)] = []

    public init(content: OriginContent) {
        self.content = content
    }

    public static func generated(size: Int64, seed: UInt64 = 1) -> OriginFile {
        OriginFile(content: .generated(size: size, seed: seed))
    }

    public static func bytes(_ bytes: [UInt8]) -> OriginFile {
        OriginFile(content: .bytes(bytes))
    }

    public static func text(_ text: String) -> OriginFile {
        OriginFile(content: .bytes(Array(text.utf8)))
    }

    var etag: String? {
        let tag = "\"" + String(content.fingerprint &+ UInt64(version), radix: 16) + "\""
        switch validators {
        case .strong: return tag
        case .weakETag: return "W/" + tag
        case .lastModifiedOnly, .none: return nil
        }
    }

    var lastModified: String? {
        guard validators == .strong || validators == .lastModifiedOnly else { return nil }
        let date = Date(timeIntervalSince1970: 1_767_225_600 + Double(version) * 3600)
        return HTTPDate.format(date)
    }
}

/// IMF-fixdate formatting (RFC 9110 §5.6.7), as used by Last-Modified, Date and Retry-After.
public enum HTTPDate {
    public static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
