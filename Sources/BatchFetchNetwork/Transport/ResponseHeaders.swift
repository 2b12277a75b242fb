import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// The response header rules the download decisions rest on, as pure functions.
package enum ResponseHeaders {
    /// `Content-Range: bytes first-last/total` (total may be `*`) or `bytes */total` (416).
    package struct ContentRange: Equatable, Sendable {
        package var first: Int64?
        package var last: Int64?
        package var total: Int64?
    }

    package static func contentRange(_ value: String?) -> ContentRange? {
        guard let value else { return nil }
        let trimmed = value.trimmingOWS()
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count)
        guard let slash = spec.firstIndex(of: "/") else { return nil }
        let range = spec[..<slash], totalText = spec[spec.index(after: slash)...]
        let total: Int64? = totalText == "*" ? nil : Int64(totalText)
        if totalText != "*" && total == nil { return nil }
        if range == "*" { return ContentRange(first: nil, last: nil, total: total) }
        let bounds = range.split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last else {
            return nil
        }
        return ContentRange(first: first, last: last, total: total)
    }

    /// `Content-Length` as a non-negative number.
    package static func contentLength(_ head: TransportResponseHead) -> Int64? {
        head.header("content-length").flatMap { Int64($0.trimmingOWS()) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The strong ETag, if any: a weak one (`W/"..."`) cannot validate a byte range.
    package static func strongETag(_ head: TransportResponseHead) -> String? {
        guard let etag = head.header("etag")?.trimmingOWS(), etag.hasPrefix("\"") else {
            return nil
        }
        return etag
    }

    /// The whole content's sha256 in hex, as an object store announces it with a full body:
    /// `x-amz-checksum-sha256` (base64 of the 32 bytes; S3 sends it to GETs that ask with
    /// `x-amz-checksum-mode: ENABLED`). Nil without one, or for a multipart object's checksum
    /// of its parts' checksums (`…-N`), which is not the content's.
    package static func announcedSHA256(_ head: TransportResponseHead) -> String? {
        guard let value = head.header("x-amz-checksum-sha256")?.trimmingOWS(), let bytes = Data(base64Encoded: value),
              bytes.count == 32, head.header("x-amz-checksum-type")?.uppercased() != "COMPOSITE" else { return nil }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Why a 206 cannot continue the partial it was asked for, or nil when it can.
    ///
    /// `If-Range` alone is not enough: busybox httpd and twisted.web ignore it and answer 206
    /// with bytes of whatever file they have now. So the response must itself prove it is the
    /// same content: the strong ETag sent in `If-Range` comes back unchanged, or — when
    /// Last-Modified was the validator — the same Last-Modified; and the `Content-Range` total
    /// is the size recorded with the partial. A response without the validator proves nothing
    /// and is refused too.
    package static func rangeMismatch(_ head: TransportResponseHead, ifRange: String, recordedTotal: Int64?) -> String? {
        if ifRange.hasPrefix("\"") {
            guard let etag = strongETag(head) else { return "a 206 without the ETag \(ifRange) it continues" }
            if etag != ifRange { return "ETag changed from \(ifRange) to \(etag) on a 206" }
        } else {
            guard let lastModified = head.header("last-modified")?.trimmingOWS() else {
                return "a 206 without the Last-Modified (\(ifRange)) it continues"
            }
            if lastModified != ifRange { return "Last-Modified changed from \(ifRange) to \(lastModified) on a 206" }
        }
        if let recordedTotal, let total = contentRange(head.header("content-range"))?.total, total != recordedTotal {
            return "size changed from \(recordedTotal) to \(total) bytes on a 206"
        }
        return nil
    }

    /// `Retry-After` in seconds from `now`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    package static func retryAfter(_ value: String?, now: Date) -> Double? {
        guard let value = value?.trimmingOWS(), !value.isEmpty else { return nil }
        if let seconds = Double(value), seconds >= 0 { return seconds }
        guard let date = httpDate(value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Parses IMF-fixdate, plus the obsolete RFC 850 and asctime forms recipients must accept.
    package static func httpDate(_ value: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) { return date }
        }
        return nil
    }
}

extension StringProtocol {
    /// Without the optional whitespace (spaces and tabs) around a header value (RFC 9110 §5.5).
    /// Foundation's `trimmingCharacters(in: .whitespaces)` did the same through `CharacterSet`,
    /// at a cost a small-file batch notices (bench/results/profile.md, "Choices the code cites").
    package func trimmingOWS() -> String {
        let bytes = utf8
        var first: String.Index?
        var end = bytes.startIndex
        var position = bytes.startIndex
        while position != bytes.endIndex {
            let byte = bytes[position]
            position = bytes.index(after: position)
            guard byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") else { continue }
            if first == nil { first = bytes.index(position, offsetBy: -1) }
            end = position
        }
        guard let first else { return "" }
        return String(self[first..<end])
    }
}
