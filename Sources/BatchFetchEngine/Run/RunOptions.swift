import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// How a run behaves beyond what the manifest says.
public struct RunOptions: Sendable {
    public var durability = Durability.batch
    /// Overrides the manifest's `concurrency`.
    public var concurrency: Int?
    /// Unwritten bytes allowed per job before its transfer pauses (cancel, drain, resume).
    public var memoryCapPerJob = FileSink.defaultMemoryCap
    /// Size of the ranges a segmented download asks for; by default the memory cap's share per
    /// connection (URLSession) or 16 MiB (a transport with backpressure). A test knob.
    var segmentRangeSize: Int64?
    /// Whether a lagging range is hedged (Docs/Mirrors.md); nil: yes, unless the environment has
    /// `BATCHFETCH_HEDGING=off`. A test knob, undocumented in `--help`: tests that count each
    /// request and byte, or gate an origin to stop a run part-way, turn it off, since a machine
    /// loaded by the whole suite can make a range lag long enough to be hedged; the tests of
    /// hedging turn it on.
    var hedging: Bool?

    /// ``hedging`` as the run applies it.
    var hedges: Bool {
        hedging ?? (environment["BATCHFETCH_HEDGING"] != "off")
    }
    /// Size of the coalesced writes.
    public var writeSize = FileSink.defaultWriteSize
    /// Simulates a disk that writes no faster than this (bytes per second), to show that memory
    /// stays bounded when the network outruns the disk. For benchmarks and tests only: outside
    /// the public API, the CLI reaches it through `@_spi(Benchmarks)` for
    /// `BATCHFETCH_SIMULATED_DISK_RATE`.
    package var simulatedDiskRate: Int64?
    /// The HTTP client; when nil, the process's shared transport of ``transportKind``.
    public var transport: (any HTTPTransport)?
    /// Which shared HTTP client to use when ``transport`` is nil (`--transport`); nil:
    /// ``TransportKind/default``.
    public var transportKind: TransportKind?
    /// Hold every job to this lockfile (`run --locked`); the caller checks first that its jobs
    /// are the manifest's (``LockFile/mismatch(with:)``).
    package var lock: LockFile?
    /// Stop starting jobs after the first failure; transfers in flight finish.
    public var failFast = false
    /// Seconds between progress events.
    public var progressInterval = 0.25
    /// sha256 of the manifest file, for the report; read from the manifest's path when nil.
    package var manifestSHA256: String?
    /// The shard this command covers when the manifest was split (`--shard`): the report says
    /// so, and the run's report, state cache and run lock are the shard's own files.
    package var shard: ShardScope?
    /// The content cache's directory (`--cache`, `BATCHFETCH_CACHE`, the manifest's `cache:`);
    /// nil: none.
    package var cache: String?
    /// Which jobs a run's report lists (`--report-jobs`); nil: all of them.
    package var reportJobs: RunReport.JobsReported?
    /// Where `SSL_CERT_FILE`, `SSL_CERT_DIR`, `CURL_CA_BUNDLE`, `NETRC` and `HOME` are read.
    package var environment = ProcessInfo.processInfo.environment
    /// `--max-duration`, `--max-bytes`, `--cutoff` over the manifest's budget; nil: the
    /// manifest's.
    public var budget: RunBudget?
    /// `--bwlimit`: the run's download rate by time of day, over the manifest's `bandwidth`.
    public var bandwidth: BandwidthTimetable?
    /// The clock budgets and rate limits are counted on (tests advance a manual one).
    package var time: any TimeSource = SystemTime()
    /// The wall-clock time a bandwidth timetable is read at (tests move it with ``time``).
    package var date: @Sendable () -> Date = { Date() }
    /// Jobs that fail before any request, by id: prefixes and sources whose listing failed and
    /// files whose path cannot be placed (``ListingExpansion/failures``).
    package var unexpanded: [String: BatchFetchError] = [:]

    public init() {}

    /// ``transport``, or the shared transport of the default kind for a `per_host` limit.
    package func httpTransport(perHost: Int) -> any HTTPTransport {
        transport ?? (transportKind ?? .default).shared(perHost: perHost)
    }
}
