import Foundation

/// One page of a ListObjectsV2 answer (`<ListBucketResult>`): the objects, and the token of the
/// next page when the listing is truncated; an answer that is not a listing is nil.
package struct BucketListing: Sendable, Equatable {
    package struct Object: Sendable, Equatable {
        package var key: String
        package var size: Int64
        package var etag: String?
    }

    package var objects: [Object] = []
    package var nextContinuationToken: String?
    package var isTruncated = false

    package init(objects: [Object] = [], nextContinuationToken: String? = nil, isTruncated: Bool = false) {
        self.objects = objects
        self.nextContinuationToken = nextContinuationToken
        self.isTruncated = isTruncated
    }

    /// The page in `data` (``S3XML`` reads it: `Contents` records of `Key`, `Size`, `ETag`;
    /// `IsTruncated`, `NextContinuationToken`); nil when it is not a `ListBucketResult`.
    package init?(xml data: Data) {
        guard let document = S3XML(data), document.root == "ListBucketResult" else { return nil }
        objects = (document.records["Contents"] ?? []).compactMap { record in
            record["Key"].map { Object(key: $0, size: record["Size"].flatMap { Int64($0) } ?? 0, etag: record["ETag"]) }
        }
        isTruncated = document.values["IsTruncated"] == "true"
        nextContinuationToken = document.values["NextContinuationToken"]
    }
}
