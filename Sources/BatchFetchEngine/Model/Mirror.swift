import BatchFetchSpec

/// One mirror of a job: the URL asked (environment values resolved), the same URL as it may be
/// printed (`${NAME}` for those values), and its identity — the sha256 of the resolved URL,
/// which sidecars and the state cache record instead of a URL that may carry a token.
public struct Mirror: Sendable, Equatable {
    public var url: String
    public var printed: String
    public var identity: String

    public init(url: String, printed: String? = nil) {
        self.url = url
        self.printed = printed ?? url
        identity = Digester.sha256Hex(url)
    }

    public init(_ url: TemplatedString) {
        self.init(url: url.resolved, printed: url.redacted)
    }
}
