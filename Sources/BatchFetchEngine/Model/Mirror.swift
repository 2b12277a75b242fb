import BatchFetchSpec
import Foundation

/// One mirror of a job: the URL asked (environment values resolved, parsed once), the same URL
/// as it may be printed (`${NAME}` for those values), and its identity — the sha256 of the
/// resolved URL, which sidecars and the state cache record instead of a URL that may carry a
/// token.
public struct Mirror: Sendable, Equatable {
    public var url: URL
    public var printed: String
    public var identity: String

    /// Nil when `resolved` is not a URL: validation refuses those, so only a library caller that
    /// built a ``Job`` by hand meets it (the job then fails before any request).
    public init?(resolved: String, printed: String? = nil) {
        guard let url = URL(string: URLSyntax.encodingInvalidCharacters(resolved)) else { return nil }
        self.url = url
        self.printed = printed ?? resolved
        identity = Self.identity(of: resolved)
    }

    public init?(_ url: TemplatedString) {
        self.init(resolved: url.resolved, printed: url.redacted)
    }

    /// The identity of a resolved URL string (what sidecars and the state cache record).
    public static func identity(of resolved: String) -> String {
        Digester.sha256Hex(resolved)
    }
}
