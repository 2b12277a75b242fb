/// What a job's `extract:` made (report v1 `extracted`): where the tree is (as the manifest
/// writes it), the format found, and the regular files and bytes in it; `repaired` counts the
/// entries a rerun restored in a tree someone changed; `streamed` says the archive was unpacked
/// while it downloaded rather than after.
public struct Extraction: Codable, Sendable, Equatable {
    public var into: String
    public var format: String
    public var files: Int
    public var bytes: Int64
    public var repaired: Int?
    public var streamed: Bool?

    public init(into: String, format: String, files: Int, bytes: Int64, repaired: Int? = nil, streamed: Bool? = nil) {
        self.into = into
        self.format = format
        self.files = files
        self.bytes = bytes
        self.repaired = repaired
        self.streamed = streamed
    }
}
