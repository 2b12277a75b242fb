/// How a job reaches `s3://` (and `gs://`) URLs (`s3:` in `defaults` or a job; Docs/ObjectStores.md).
/// Every field left out is found as the AWS CLI finds it: the environment, then the profile's
/// `~/.aws/config` and `~/.aws/credentials`.
package struct S3Settings: Sendable, Hashable {
    /// The signing region; else `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's, `us-east-1`.
    package var region: String?
    /// A custom endpoint (`http(s)://host[:port]`: MinIO, R2, Ceph, moto); else
    /// `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, else AWS's regional endpoint.
    package var endpoint: String?
    /// Unsigned requests (public buckets), whatever credentials are around.
    package var anonymous = false
    /// `https://endpoint/bucket/key` rather than `https://bucket.endpoint/key`; by default true
    /// with a custom endpoint, false with AWS's.
    package var pathStyle: Bool?
    /// The profile of the shared files; else `AWS_PROFILE`, else `default`.
    package var profile: String?

    package init(region: String? = nil, endpoint: String? = nil, anonymous: Bool = false, pathStyle: Bool? = nil, profile: String? = nil) {
        self.region = region
        self.endpoint = endpoint
        self.anonymous = anonymous
        self.pathStyle = pathStyle
        self.profile = profile
    }
}
