import Foundation

/// What the origin answers to one request; decided without any I/O so the rules are easy to read.
struct OriginResponse {
    var status: Int
    var headers: [(String, String)]
    /// Body bytes to send, as a range of the content (empty for HEAD and errors).
    var body: Range<Int64>
    var fault: OriginFile.Fault?

    /// The answer of `file` to `method` for the request target `uri` with `requestHeaders`;
    /// `fault` is the one consumed for this request, if any.
    static func make(
        for file: OriginFile?, method: String, uri: String = "", requestHeaders: [(String, String)], fault: OriginFile.Fault?
    ) -> OriginResponse {
        func header(_ name: String) -> String? {
            requestHeaders.first { $0.0.lowercased() == name }?.1
        }
        guard let file else {
            return OriginResponse(status: 404, headers: [("Content-Length", "0")], body: 0..<0, fault: nil)
        }
        if method == "HEAD" && file.refusesHead {
            return OriginResponse(status: 405, headers: [("Allow", "GET"), ("Content-Length", "0")], body: 0..<0, fault: nil)
        }
        if case .status(let status, let retryAfter)? = fault {
            var headers = [("Content-Length", "0")]
            if let retryAfter { headers.append(("Retry-After", retryAfter)) }
            return OriginResponse(status: status, headers: headers, body: 0..<0, fault: nil)
        }
        if let status = file.fixedStatus {
            return OriginResponse(status: status, headers: [("Content-Length", "0")] + file.extraHeaders, body: 0..<0, fault: nil)
        }
        if let location = file.redirectTo {
            return OriginResponse(
                status: file.redirectStatus,
                headers: [("Location", location.replacingOccurrences(of: "{uri}", with: uri)), ("Content-Length", "0")], body: 0..<0,
                fault: nil)
        }

        let size = file.content.size
        var headers: [(String, String)] = [("Content-Type", "application/octet-stream")]
        if let etag = file.etag { headers.append(("ETag", etag)) }
        if let lastModified = file.lastModified { headers.append(("Last-Modified", lastModified)) }
        if file.acceptsRanges && !file.ignoresRange { headers.append(("Accept-Ranges", "bytes")) }
        headers.append(contentsOf: file.extraHeaders)

        // Conditional GET (RFC 9110 §13.1): If-None-Match (weak comparison) wins over
        // If-Modified-Since; a match is 304 with the validators and no body.
        let notModified: Bool
        if let tags = header("if-none-match") {
            let current = file.etag.map { $0.hasPrefix("W/") ? String($0.dropFirst(2)) : $0 }
            notModified = tags == "*" || tags.split(separator: ",").contains {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == current
            }
        } else if let since = header("if-modified-since"), let lastModified = file.lastModified {
            notModified = since == lastModified
        } else {
            notModified = false
        }
        if notModified, method == "GET" || method == "HEAD" {
            return OriginResponse(status: 304, headers: headers.filter { $0.0 == "ETag" || $0.0 == "Last-Modified" },
                                  body: 0..<0, fault: nil)
        }

        var status = 200
        var body: Range<Int64> = 0..<size
        if let rangeHeader = header("range"), file.acceptsRanges, !file.ignoresRange,
           file.ignoresIfRange || ifRangeMatches(header("if-range"), file: file) {
            switch parseRange(rangeHeader, size: size) {
            case .satisfiable(let range):
                status = 206
                body = range
                headers.append(("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"))
            case .unsatisfiable:
                return OriginResponse(
                    status: 416, headers: headers + [("Content-Range", "bytes */\(size)"), ("Content-Length", "0")],
                    body: 0..<0, fault: nil)
            case .malformed:
                break
            }
        }
        if !file.omitsContentLength {
            let declared = Int64(body.count) + file.contentLengthError
            headers.append(("Content-Length", String(max(0, declared))))
        }
        if method == "HEAD" { body = 0..<0 }
        return OriginResponse(status: status, headers: headers, body: body, fault: fault)
    }

    /// RFC 9110 §13.1.5: a range applies only if If-Range matches the current strong ETag or the
    /// Last-Modified date exactly; a weak ETag never matches.
    private static func ifRangeMatches(_ value: String?, file: OriginFile) -> Bool {
        guard let value else { return true }
        if value.hasPrefix("W/") { return false }
        if value.hasPrefix("\"") { return file.validators == .strong && value == file.etag }
        return value == file.lastModified
    }

    enum RangeResult: Equatable {
        case satisfiable(Range<Int64>)
        case unsatisfiable
        case malformed
    }

    /// Parses a single `bytes=` range (`N-`, `N-M`, `-S`).
    static func parseRange(_ header: String, size: Int64) -> RangeResult {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .malformed }
        let spec = header.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return .malformed }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int64(last), suffix > 0 else { return .malformed }
            return size == 0 ? .unsatisfiable : .satisfiable(max(0, size - suffix)..<size)
        }
        guard let start = Int64(first) else { return .malformed }
        let end = last.isEmpty ? size - 1 : min(Int64(last) ?? -1, size - 1)
        guard !last.isEmpty ? Int64(last) != nil : true else { return .malformed }
        guard start < size, start <= end else { return .unsatisfiable }
        return .satisfiable(start..<end + 1)
    }
}
