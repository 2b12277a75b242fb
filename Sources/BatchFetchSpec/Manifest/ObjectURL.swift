import Foundation

/// An object-store URL — `s3://bucket/key` or `gs://bucket/object` — taken apart in one place
/// (Docs/ObjectStores.md): validation, prefix expansion and the mirrors that sign requests all
/// read a store URL through this, so they cannot disagree on what its bucket or key is.
package struct ObjectURL: Sendable, Equatable {
    package enum Store: String, Sendable {
        case s3, gs
    }

    package let store: Store
    package let bucket: String
    /// The key as stored: percent-decoded, without the `/` that separates it from the bucket.
    package let key: String

    package init(store: Store, bucket: String, key: String) {
        self.store = store
        self.bucket = bucket
        self.key = key
    }

    /// A key that is empty or ends with `/` names a prefix (``ObjectListing``), not an object.
    package var isPrefix: Bool { key.isEmpty || key.hasSuffix("/") }

    /// The store `text` names by its scheme (`s3://`, `gs://`, any case), or nil. Asked of every
    /// URL a manifest holds: the scheme is compared byte by byte, no copy made.
    package static func store(of text: String) -> Store? {
        let head = text.utf8.prefix(5).lazy.map { $0 | 0x20 }
        if head.elementsEqual("s3://".utf8) { return .s3 }
        if head.elementsEqual("gs://".utf8) { return .gs }
        return nil
    }

    /// The parts of a store URL, or why it is not a usable one (`shown` is the URL as it may be
    /// printed); nil for a URL of another scheme.
    package static func parse(_ text: String, shown: String) -> Result<ObjectURL, URLProblem>? {
        guard let store = store(of: text) else { return nil }
        guard let components = URLComponents(string: URLSyntax.encodingInvalidCharacters(text)) else {
            return .failure(URLProblem("'\(shown)' is not a valid URL"))
        }
        guard let bucket = components.host, !bucket.isEmpty else { return .failure(URLProblem("URL '\(shown)' has no bucket")) }
        guard components.query == nil, components.fragment == nil else {
            return .failure(URLProblem("URL '\(shown)': an object URL has no query or fragment"))
        }
        return .success(ObjectURL(store: store, bucket: bucket, key: String(components.path.dropFirst())))
    }

    /// Whether `text` names a prefix of a bucket (its key empty or ending with `/`).
    package static func isPrefix(_ text: String) -> Bool {
        guard store(of: text) != nil else { return false }
        let rest = text.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/") else { return true }
        return rest[slash...].hasSuffix("/")
    }
}

/// Why a URL cannot be used, in words for a message.
package struct URLProblem: Error, Sendable, Equatable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }
}
