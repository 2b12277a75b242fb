/// A decoded and validated manifest v1: what to fetch, where to, and how hard to try.
public struct Manifest: Sendable {
    /// The manifest's path as the user gave it; used in messages and reports.
    public var path: String
    public var version: Int
    /// Absolute directory that relative `dest` paths are resolved against.
    public var outputDirectory: String
    /// Jobs transferring at once.
    public var concurrency: Int
    /// Connections per host.
    public var perHost: Int
    /// Overall cap in bytes per second, if any.
    public var rateLimit: Int64?
    /// `bandwidth:`: the run's total download rate by time of day and week (rclone's syntax).
    public var bandwidth: BandwidthTimetable?
    /// `hooks:`: commands, URLs and pings fired when the run starts and ends.
    public var hooks = Hooks()
    /// `max_duration`, `max_bytes` and `cutoff`: when the run stops starting (or running) jobs.
    public var budget = RunBudget()
    /// How many shards `--shard auto` splits the manifest into when the environment gives only
    /// an index (a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`).
    public var shardCount: Int?
    /// The content cache's directory (`cache:`, absolute), if the manifest names one.
    public var cache: String?
    /// How a file is published from the cache (`cache_link:`).
    public var cacheLink = CacheLink.copy

    /// `cache_link`: a copy of the cache entry (a reflink where the file system has them), or
    /// a hard link to it — no copy at all, but the published file is the entry: written in
    /// place, it corrupts the entry (which its next use catches and evicts), and it is
    /// read-only (mode 0444) like every entry.
    public enum CacheLink: String, Sendable, CaseIterable {
        case copy, hardlink
    }
    /// `hash_mirrors` (top level or under `defaults`): URL templates with `{sha256}` (and
    /// `{sha256_2}`, its first two digits), asked for a job's content by its sha256 before the
    /// job's own URLs.
    public var hashMirrors: [TemplatedString] = []
    /// The external resolvers `resolvers:` names, by scheme (Docs/Sources.md).
    package var resolvers: [String: ExternalResolver] = [:]
    /// Jobs in manifest order: those of `jobs`, then each list's rows in list order.
    public var jobs: [Job]
    /// `jobs_from`, in order; a location's ``SourceLocation/file`` `k` is `lists[k - 1]`.
    package var lists: [JobList] = []

    public init(
        path: String, version: Int = 1, outputDirectory: String, concurrency: Int = 4, perHost: Int = 6,
        rateLimit: Int64? = nil, jobs: [Job]
    ) {
        self.path = path
        self.version = version
        self.outputDirectory = outputDirectory
        self.concurrency = concurrency
        self.perHost = perHost
        self.rateLimit = rateLimit
        self.jobs = jobs
    }

    /// The files locations point into: the manifest, then each list as written in it.
    public var sourceFiles: [String] {
        [path] + lists.map(\.file)
    }

    /// The default path of one of the tool's own files (``ToolFiles``) in the output directory.
    public func toolFile(_ name: String) -> String {
        outputDirectory + "/" + name
    }

    public static let defaultConcurrency = 4
    public static let defaultPerHost = 6
}
