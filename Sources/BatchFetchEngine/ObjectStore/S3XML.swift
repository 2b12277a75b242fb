import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The small XML documents of S3's multipart upload API (`InitiateMultipartUploadResult`,
/// `ListPartsResult`, `CompleteMultipartUploadResult`, `Error`), read with Foundation's XML
/// parser: the root's name, its leaf elements' text by name, and the repeated records under it
/// (`Part`) as name → text.
struct S3XML: Sendable {
    var root = ""
    /// Text of the root's direct leaf children, by name.
    var values: [String: String] = [:]
    /// Each direct child of the root that has children of its own, as its leaves' text, by the
    /// child's name.
    var records: [String: [[String: String]]] = [:]

    /// Nil when `data` is not XML.
    init?(_ data: Data) {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse(), !reader.document.root.isEmpty else { return nil }
        self = reader.document
    }

    private init() {}

    /// `Code: Message` of an `<Error>` document (S3 may answer 200 to a completion with one).
    var error: String? {
        root == "Error" ? "\(values["Code"] ?? "Error"): \(values["Message"] ?? "")" : nil
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var document = S3XML()
        private var path: [String] = []
        private var text = ""
        private var record: [String: String]?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if path.isEmpty { document.root = name }
            if path.count == 2, record == nil { record = [:] }
            path.append(name)
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch path.count {
            case 2:
                if let record, !record.isEmpty {
                    document.records[name, default: []].append(record)
                } else {
                    document.values[name] = text
                }
                record = nil
            case 3:
                record?[name] = text
            default:
                break
            }
            path.removeLast()
            text = ""
        }
    }
}
