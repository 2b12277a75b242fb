import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState

extension JobDownloader {
    /// What every job of a run shares: the output directory, the transport and its limits, the
    /// memory and write settings, the interrupt switch and the state cache. Made once by the
    /// ``Runner``.
    struct Context: Sendable {
        /// The output directory, opened once for the run; every file is reached beneath it.
        var root: SafeDirectory
        var transport: any HTTPTransport
        var hosts: HostLimiter
        /// The run's overall `rate_limit`, if any.
        var rateLimiter: RateLimiter?
        var durability: Durability
        var memoryCap: Int
        var writeSize: Int
        var simulatedDiskRate: Int64?
        var segmentRangeSize: Int64?
        /// Whether lagging ranges are hedged (``RunOptions``).
        var hedging = true
        var interruption: Interruption
        /// What earlier runs verified (digests and validators by dest).
        var state: StateCache
        /// The content cache (`cache:`, `--cache`), when the run has one.
        var cache: ContentCache? = nil
        /// `cache_link`: copies, or hard links to the entries.
        var cacheLink = Manifest.CacheLink.copy
        /// The manifest's `hash_mirrors` templates.
        var hashMirrors: [TemplatedString] = []
        /// The names the destination directories held when the run began.
        var listings: DirectoryListings?
        /// `per_host`, for transports made for a job's TLS settings.
        var perHost: Int
        /// Where `SSL_CERT_FILE`, `NETRC` and the like are read.
        var environment: [String: String]
    }
}
