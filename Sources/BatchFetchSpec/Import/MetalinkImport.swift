import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A Metalink 4 file (RFC 5854): each `<file name>` with its `<size>`, `<hash type>`s and
/// `<url priority>`s becomes a job whose mirrors are its URLs by priority (1 first; no
/// priority last) and whose checksums are every hash batchfetch knows (sha-256, sha-512, sha-1,
/// md5). Read with Foundation's XMLParser; problems carry the parser's line.
public enum MetalinkImport {
    public static func read(_ data: Data, file: String) -> ImportResult {
        let reader = Reader(file: file)
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = reader
        // FoundationXML may return true for a document that ends badly yet set the error.
        if !parser.parse() || parser.parserError != nil {
            // What was read of a broken document is not trusted: only the error is reported.
            let code = parser.parserError.map { " (XMLParser error \(($0 as NSError).code))" } ?? ""
            return ImportResult(problems: [ImportProblem(file: file, line: parser.lineNumber, "not well-formed XML\(code)")])
        } else if !reader.sawMetalink {
            reader.result.problems.append(ImportProblem(file: file, line: 1, "not a Metalink 4 file (no <metalink> in urn:ietf:params:xml:ns:metalink)"))
        }
        return reader.result
    }

    static let namespace = "urn:ietf:params:xml:ns:metalink"
    static let hashTypes: [String: Checksum.Algorithm] = ["sha-256": .sha256, "sha-512": .sha512, "sha-1": .sha1, "md5": .md5]

    /// The parser's delegate: one `<file>` at a time.
    private final class Reader: NSObject, XMLParserDelegate {
        let file: String
        var result = ImportResult()
        var sawMetalink = false
        private var current: (name: String, line: Int, size: Int64?, checksums: [Checksum], urls: [(priority: Int, url: String)])?
        private var text = ""
        private var hashType: String?
        private var priority = Int.max

        init(file: String) {
            self.file = file
        }

        func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            text = ""
            if element == "metalink" {
                if namespaceURI == MetalinkImport.namespace { sawMetalink = true }
                if namespaceURI == "http://www.metalinker.org/" { problem(parser, "Metalink 3 is not supported; Metalink 4 (RFC 5854) is") }
                return
            }
            guard namespaceURI == MetalinkImport.namespace else { return }
            switch element {
            case "file":
                current = (attributes["name"] ?? "", parser.lineNumber, nil, [], [])
                if attributes["name"]?.isEmpty ?? true { problem(parser, "a <file> without a name") }
            case "hash":
                hashType = attributes["type"]?.lowercased()
            case "url":
                priority = attributes["priority"].flatMap(Int.init) ?? Int.max
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            guard namespaceURI == MetalinkImport.namespace, current != nil else { return }
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch element {
            case "size":
                guard let size = Int64(value), size >= 0 else { return problem(parser, "<size> '\(value)' is not a byte count") }
                current!.size = size
            case "hash":
                // Only whole-file hashes (not <pieces>' hashes); types batchfetch does not know are skipped.
                guard let type = hashType, let algorithm = MetalinkImport.hashTypes[type] else { return }
                switch Checksum.parse("\(algorithm.rawValue):\(value)") {
                case .success(let checksum): current!.checksums.append(checksum)
                case .failure: problem(parser, "<hash type=\"\(type)\"> '\(value)' is not a \(algorithm.rawValue) digest")
                }
                hashType = nil
            case "pieces":
                hashType = nil
            case "url":
                if let issue = ImportLines.urlProblem(value) { return problem(parser, issue) }
                current!.urls.append((priority, value))
            case "file":
                let job = current!
                current = nil
                guard !job.name.isEmpty else { return }
                guard !job.urls.isEmpty else { return problem(parser, "<file name=\"\(job.name)\"> has no http(s) <url>", line: job.line) }
                let urls = job.urls.enumerated().sorted { ($0.element.priority, $0.offset) < ($1.element.priority, $1.offset) }.map(\.element.url)
                result.jobs.append(ImportedJob(urls: urls, dest: job.name, size: job.size, checksums: job.checksums, origin: "\(file):\(job.line)"))
            default:
                break
            }
        }

        private func problem(_ parser: XMLParser, _ message: String, line: Int? = nil) {
            result.problems.append(ImportProblem(file: file, line: line ?? parser.lineNumber, message))
        }
    }
}
