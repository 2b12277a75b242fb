import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A small XML document read whole into a tree of elements, for the few XML formats batchfetch
/// reads — S3's answers (listings, multipart uploads, errors) and Metalink 4 — so that both
/// check a document the same way. FoundationXML on Linux returns true from `parse()` for a
/// document that ends badly yet sets `parserError`: both are checked here, once, and what was
/// read of a broken document is never handed out.
package struct XMLTree: Sendable {
    package struct Element: Sendable {
        package var name: String
        /// The element's namespace URI (only when read with namespaces).
        package var namespace: String?
        package var attributes: [String: String]
        /// The element's own text (its children's not included).
        package var text: String
        package var children: [Element]
        /// The line its start tag ends on.
        package var line: Int

        /// The direct children named `name` (in `namespace`, when given).
        package func children(_ name: String, in namespace: String? = nil) -> [Element] {
            children.filter { $0.name == name && (namespace == nil || $0.namespace == namespace) }
        }
    }

    /// Why a document could not be read: where the parser stopped, and its error code.
    package struct Failure: Error, Sendable, Equatable {
        package var line: Int
        package var code: Int?
    }

    /// The root element of `data`. With `namespaces`, names are local names with their URI in
    /// ``Element/namespace``; without, names are as written (`s3:Key`).
    package static func parse(_ data: Data, namespaces: Bool = false) -> Result<Element, Failure> {
        let builder = Builder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = namespaces
        parser.delegate = builder
        guard parser.parse(), parser.parserError == nil, let root = builder.root else {
            return .failure(Failure(line: parser.lineNumber, code: parser.parserError.map { ($0 as NSError).code }))
        }
        return .success(root)
    }

    /// The parser's delegate: a stack of open elements, each closed into its parent.
    private final class Builder: NSObject, XMLParserDelegate {
        var root: Element?
        private var open: [Element] = []

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            open.append(Element(name: name, namespace: namespaceURI, attributes: attributes, text: "", children: [],
                                line: parser.lineNumber))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if !open.isEmpty { open[open.count - 1].text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard let element = open.popLast() else { return }
            if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
        }
    }
}
