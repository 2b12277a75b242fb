import Foundation

/// One page of a ListObjectsV2 answer (`<ListBucketResult>`): the objects, and the token of the
/// next page when the listing is truncated; an answer that is not a listing is nil.
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

    /// The page in `data` (``S3XML`` reads it: `Contents` records of `Key`, `Size`, `ETag`;
    /// `IsTruncated`, `NextContinuationToken`); nil when it is not a `ListBucketResult`.
    init?(xml data: Data) {
        guard let document = S3XML(data), document.root == "ListBucketResult" else { return nil }
        objects = (document.records["Contents"] ?? []).compactMap { record in
            record["Key"].map { Object(key: $0, size: record["Size"].flatMap { Int64($0) } ?? 0, etag: record["ETag"]) }
        }
        isTruncated = document.values["IsTruncated"] == "true"
        nextContinuationToken = document.values["NextContinuationToken"]
    }
}
