import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One page of a ListObjectsV2 answer (`<ListBucketResult>`): the objects, and the token of the
/// next page when the listing is truncated. Read with Foundation's XML parser (no parser of our
/// own); an answer that is not a listing is nil.
struct BucketListing: Sendable, Equatable {
    struct Object: Sendable, Equatable {
        var key: String
        var size: Int64
        var etag: String?
    }

    var objects: [Object] = []
    var nextContinuationToken: String?
    var isTruncated = false

    init(objects: [Object] = [], nextContinuationToken: String? = nil, isTruncated: Bool = false) {
        self.objects = objects
        self.nextContinuationToken = nextContinuationToken
        self.isTruncated = isTruncated
    }

    /// The page in `data`; nil when it is not a `ListBucketResult`.
    init?(xml data: Data) {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse(), reader.isListing else { return nil }
        self = reader.listing
    }

    /// Collects `Contents` (`Key`, `Size`, `ETag`), `IsTruncated` and `NextContinuationToken`.
    private final class Reader: NSObject, XMLParserDelegate {
        var listing = BucketListing()
        var isListing = false
        private var path: [String] = []
        private var text = ""
        private var object: Object?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if path.isEmpty { isListing = name == "ListBucketResult" }
            path.append(name)
            text = ""
            if path == ["ListBucketResult", "Contents"] { object = Object(key: "", size: 0) }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch path {
            case ["ListBucketResult", "Contents", "Key"]: object?.key = text
            case ["ListBucketResult", "Contents", "Size"]: object?.size = Int64(text) ?? 0
            case ["ListBucketResult", "Contents", "ETag"]: object?.etag = text
            case ["ListBucketResult", "Contents"]:
                if let object { listing.objects.append(object) }
                object = nil
            case ["ListBucketResult", "IsTruncated"]: listing.isTruncated = text == "true"
            case ["ListBucketResult", "NextContinuationToken"]: listing.nextContinuationToken = text
            default: break
            }
            path.removeLast()
            text = ""
        }
    }
}
