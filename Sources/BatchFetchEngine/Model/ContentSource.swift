/// Where a downloaded job's bytes came from (`source` in report v1): what a reproducible fetch
/// needs to know about a run that made fewer requests than it has jobs.
public enum ContentSource: String, Codable, Sendable, CaseIterable {
    /// A request to one of the job's URLs.
    case network
    /// The content cache (`cache:`, `--cache`), without a request.
    case cache
    /// A hash mirror (`hash_mirrors:`), asked for the content by its sha256.
    case hashMirror = "hash_mirror"
    /// Another job of the run that fetched the same URL (``JobResult/copiedFrom``).
    case link
}
