import BatchFetchSpec
import Foundation
import Testing

/// The one XML reader (``XMLTree``): a whole document as a tree, or where it broke.
@Suite struct XMLTreeTests {
    @Test func aDocumentBecomesATree() throws {
        let root = try XMLTree.parse(Data("""
            <?xml version="1.0"?>
            <r xmlns="urn:x"><a k="v">one</a>
            <b><c>two</c></b></r>
            """.utf8), namespaces: true).get()
        #expect(root.name == "r" && root.namespace == "urn:x")
        #expect(root.children("a", in: "urn:x").first?.attributes == ["k": "v"])
        #expect(root.children("a").first?.text == "one" && root.children("a").first?.line == 2)
        #expect(root.children("b").first?.children.first?.text == "two")
    }

    /// FoundationXML returns true from `parse()` for some documents that end badly; the tree
    /// is refused all the same, and nothing of it is handed out.
    @Test func aBrokenDocumentIsRefused() {
        for text in ["<ListBucketResult><Contents><Key>a", "<r><a></b></r>", "not xml at all", ""] {
            guard case .failure = XMLTree.parse(Data(text.utf8)) else {
                Issue.record("accepted: \(text)")
                continue
            }
        }
    }
}
