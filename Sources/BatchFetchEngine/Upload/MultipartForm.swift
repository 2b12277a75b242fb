import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import MultipartKit
import NIOCore
import NIOHTTP1

/// A `multipart/form-data` body (RFC 7578) around a file that is streamed, not held: the text
/// fields and the file part's headers before it, the closing boundary after it. MultipartKit
/// frames the parts; the file part is framed with an empty body, which is where the file's bytes
/// go, so the length of the whole body is known before it is sent.
struct MultipartForm {
    let boundary: String
    let prefix: Data
    let suffix: Data

    /// The form of an upload job: `fields` in manifest order, then the file as `fileName`.
    init(form: Upload.Form, fileName: String, boundary: String = MultipartForm.randomBoundary()) throws {
        self.boundary = boundary
        var parts: [MultipartPart] = form.fields.map { field in
            MultipartPart(headers: ["Content-Disposition": "form-data; name=\"\(field.name)\""], body: field.value.resolved)
        }
        parts.append(MultipartPart(
            headers: ["Content-Disposition": "form-data; name=\"\(form.fileField)\"; filename=\"\(form.fileName ?? fileName)\"",
                      "Content-Type": form.contentType],
            body: ByteBuffer()))
        var framed = ByteBuffer()
        try MultipartSerializer().serialize(parts: parts, boundary: boundary, into: &framed)
        let whole = Data(framed.readableBytesView)
        let closing = Data("\r\n--\(boundary)--\r\n".utf8)
        guard whole.count >= closing.count, whole.suffix(closing.count) == closing else {
            throw BatchFetchError(.ioError, "multipart framing ended unexpectedly")
        }
        prefix = whole.prefix(whole.count - closing.count)
        suffix = closing
    }

    /// The request's `Content-Type`.
    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// 32 random letters and digits: a file would have to contain them after CRLF and "--" to
    /// break the form, which 190 bits of randomness make impossible in practice.
    static func randomBoundary() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return "batchfetch-" + String((0..<32).map { _ in alphabet.randomElement(using: &generator)! })
    }
}
