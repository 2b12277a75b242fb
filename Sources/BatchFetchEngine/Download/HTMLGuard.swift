import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// An HTML page is not a dataset (Docs/Sources.md, "An HTML page is not a dataset"): a file
/// host's quota, login or virus-scan page served with 200 where the file was asked for. A pure
/// rule, asked by the downloader when a body is complete and before it is published.
///
/// It applies to a download with no pinned checksum (a digest already catches any page), no
/// `accept_html: true`, and neither a URL path nor a dest that ends in `.htm`/`.html`. The page
/// is recognised by its `Content-Type` (`text/html`) or by its first bytes: `<!DOCTYPE html` or
/// `<html`, case ignored, after a BOM and whitespace.
struct HTMLGuard: Sendable {
    /// Bytes of the body read to recognise a page and find its title.
    static let sniffLength = 16 << 10

    let applies: Bool

    init(job: Job) {
        func endsInHTML(_ text: String) -> Bool {
            let lowered = text.lowercased()
            return lowered.hasSuffix(".html") || lowered.hasSuffix(".htm")
        }
        let urlPaths = job.urls.map { URL(string: $0.resolved)?.path ?? $0.resolved }
        applies = !job.settings.acceptHTML && job.checksums.isEmpty && job.checksumsFrom == nil && !job.isUpload
            && !endsInHTML(job.dest.resolved) && !urlPaths.contains(where: endsInHTML)
    }

    /// The failure for a body that is a page, or nil: `contentType` is the response's, `prefix`
    /// the body's first bytes (up to ``sniffLength``), `served` the URL as it may be printed.
    func failure(contentType: String?, prefix: Data, served: String) -> BatchFetchError? {
        guard applies, Self.isHTML(contentType: contentType, prefix: prefix) else { return nil }
        let title = Self.title(prefix).map { " ('\($0)')" } ?? ""
        return BatchFetchError(.unexpectedHTML, "\(served) answered with an HTML page\(title) instead of the file "
            + "(set accept_html: true if a page is what you want)")
    }

    static func isHTML(contentType: String?, prefix: Data) -> Bool {
        if let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
           type == "text/html" || type == "application/xhtml+xml" { return true }
        var bytes = prefix[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        bytes = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0x0C }
        let head = String(decoding: bytes.prefix(14), as: UTF8.self).lowercased()
        return head.hasPrefix("<!doctype html") || head.hasPrefix("<html")
    }

    /// The page's `<title>`, whitespace collapsed, at most 120 characters.
    static func title(_ prefix: Data) -> String? {
        let text = String(decoding: prefix, as: UTF8.self)
        guard let open = text.range(of: "<title", options: .caseInsensitive),
              let end = text[open.upperBound...].firstIndex(of: ">"),
              let close = text[end...].range(of: "</title", options: .caseInsensitive) else { return nil }
        let words = text[text.index(after: end)..<close.lowerBound].split(whereSeparator: { $0.isWhitespace || $0.isNewline })
        let title = words.joined(separator: " ")
        return title.isEmpty ? nil : String(title.prefix(120))
    }
}
