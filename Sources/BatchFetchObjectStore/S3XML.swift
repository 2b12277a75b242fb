import BatchFetchSpec
import Foundation

/// The small XML documents of S3's API (`ListBucketResult`, `InitiateMultipartUploadResult`,
/// `ListPartsResult`, `CompleteMultipartUploadResult`, `Error`) as batchfetch reads them: the
/// root's name, its leaf elements' text by name, and the repeated records under it (`Part`,
/// `Contents`) as name → text. Read through ``XMLTree`` (the one XML reader, which also catches
/// a document that ends badly).
package struct S3XML: Sendable {
    package var root = ""
    /// Text of the root's direct leaf children, by name.
    package var values: [String: String] = [:]
    /// Each direct child of the root that has children of its own, as its leaves' text, by the
    /// child's name.
    package var records: [String: [[String: String]]] = [:]

    /// Nil when `data` is not a whole XML document.
    package init?(_ data: Data) {
        guard case .success(let document) = XMLTree.parse(data) else { return nil }
        root = document.name
        for child in document.children {
            if child.children.isEmpty {
                values[child.name] = child.text
            } else {
                var record: [String: String] = [:]
                for leaf in child.children { record[leaf.name] = leaf.text }
                records[child.name, default: []].append(record)
            }
        }
    }

    /// `Code: Message` of an `<Error>` document (S3 may answer 200 to a completion with one).
    package var error: String? {
        root == "Error" ? "\(values["Code"] ?? "Error"): \(values["Message"] ?? "")" : nil
    }
}
