import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// One mirror of a job: the URL asked (environment values resolved, parsed once), the same URL
/// as it may be printed (`${NAME}` for those values), and its identity — the sha256 of the
/// resolved URL, which sidecars and the state cache record instead of a URL that may carry a
/// token. (Not called `Mirror`: in a program that imports the engine that name would shadow
/// `Swift.Mirror`, which `customMirror` and `dump` need.)
package struct MirrorURL: Sendable, Equatable {
    package var url: URL
    package var printed: String
    package var identity: String
    /// Where an `s3://` or `gs://` mirror is, whose `url` is then the store's http(s) URL of
    /// the object (``AWSConfiguration``); nil for any other.
    package var store: ObjectLocation?

    /// Signs the mirror's requests; nil unless it is in a store and not anonymous.
    package var signer: SigV4Signer? { store?.configuration.signer }

    /// Nil when `resolved` is not a URL: validation refuses those, so only a library caller that
    /// built a ``Job`` by hand meets it (the job then fails before any request).
    package init?(resolved: String, printed: String? = nil) {
        guard let url = URL(string: URLSyntax.encodingInvalidCharacters(resolved)) else { return nil }
        self.url = url
        self.printed = printed ?? resolved
        identity = Self.identity(of: resolved)
    }

    package init?(_ url: TemplatedString) {
        self.init(resolved: url.resolved, printed: url.redacted)
    }

    /// A job's mirror: an `s3://bucket/key` or `gs://bucket/object` URL becomes the store's
    /// http(s) URL of the object, signed as `s3` and the environment say; the identity stays
    /// that of the URL as written.
    package init?(_ url: TemplatedString, s3: S3Settings, environment: [String: String]) {
        let resolved = url.resolved
        guard let parsed = ObjectURL.parse(resolved, shown: url.redacted) else {
            self.init(resolved: resolved, printed: url.redacted)
            return
        }
        guard case .success(let object) = parsed, !object.key.isEmpty else { return nil }
        let configuration = AWSConfiguration.resolve(scheme: object.store.rawValue, settings: s3, environment: environment)
        guard let target = configuration.url(bucket: object.bucket, key: object.key) else { return nil }
        self.init(resolved: resolved, printed: url.redacted)
        self.url = target
        store = ObjectLocation(bucket: object.bucket, key: object.key, configuration: configuration)
    }

    /// The identity of a resolved URL string (what sidecars and the state cache record).
    package static func identity(of resolved: String) -> String {
        Digester.sha256Hex(resolved)
    }
}

/// An object (or, for a key ending in `/`, a prefix) in a bucket, and how its store is reached.
package struct ObjectLocation: Sendable, Equatable {
    package var bucket: String
    package var key: String
    package var configuration: AWSConfiguration

    /// The URL of one page of the ListObjectsV2 listing of the keys under ``key``.
    package func listURL(continuation: String?) -> URL? {
        configuration.url(bucket: bucket, key: "", query: [("list-type", "2"), ("prefix", key)]
            + (continuation.map { [("continuation-token", $0)] } ?? []))
    }
}
