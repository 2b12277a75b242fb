/// One file to fetch — where from, where to, what it must be, and what it waits for — or, with
/// ``upload``, one local file to send to a URL.
public struct Job: Sendable, CustomReflectable {
    /// The request's method: GET or POST for a download, PUT or POST for an upload.
    public enum Method: String, Sendable, CaseIterable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
    }

    public struct Header: Hashable, Sendable {
        public var name: String
        public var value: TemplatedString

        public init(name: String, value: TemplatedString) {
            self.name = name
            self.value = value
        }
    }

    public var id: String
    /// The first of ``urls`` (nil only for a job that has none, which validation refuses).
    public private(set) var url: TemplatedString?
    /// Normalised path relative to the manifest's output directory: where a download is
    /// published, or the file an upload sends (its `upload` key).
    public var dest: TemplatedString
    package var settings: JobSettings
    /// Where each part was written, for messages that come after decoding.
    package var source: JobSource
    /// What most jobs of a large manifest do not have (``Extras``).
    private var extras: Extras
    /// ``size``, or `Int64.min` for none: an optional would pad the job by 8 bytes.
    private var storedSize: Int64
    /// The first of ``checksums``, inline: nearly every pinned job has exactly one.
    private var checksum: Checksum?

    /// Mirrors, tried in order: ``url`` and the rest, which live in ``Extras`` (one array per
    /// job cost 64 bytes of heap for the one URL nearly every job has).
    public var urls: [TemplatedString] {
        get {
            guard let url else { return [] }
            return extras.moreURLs.isEmpty ? [url] : [url] + extras.moreURLs
        }
        set {
            url = newValue.first
            let more = Array(newValue.dropFirst())
            if more != extras.moreURLs { extras = extras.with { $0.moreURLs = more } }
        }
    }

    /// Expected size in bytes, enforced when set.
    public var size: Int64? {
        get { storedSize == Int64.min ? nil : storedSize }
        set { storedSize = newValue ?? Int64.min }
    }

    /// Expected digests, at most one per algorithm: the first inline, the rest in ``Extras``.
    public var checksums: [Checksum] {
        get {
            guard let checksum else { return [] }
            return extras.moreChecksums.isEmpty ? [checksum] : [checksum] + extras.moreChecksums
        }
        set {
            checksum = newValue.first
            let more = Array(newValue.dropFirst())
            if more != extras.moreChecksums { extras = extras.with { $0.moreChecksums = more } }
        }
    }

    /// The fields nearly every job leaves at their defaults — a method other than GET, a body,
    /// headers of its own, dependencies, an upload — kept in one shared, copy-on-write box, as
    /// ``JobSettings`` keeps the settings: inline they were 80 of a job's 200 bytes, at a million
    /// jobs 80 MB of the same empty values. The jobs of a manifest that take `defaults`' headers
    /// unchanged share one box (the decoders copy a prototype job).
    private final class Extras: Sendable {
        let moreURLs: [TemplatedString]
        let moreChecksums: [Checksum]
        let checksumsFrom: String?
        let dependsOn: [String]
        let method: Method
        let body: TemplatedString?
        let headers: [Header]
        let upload: Upload?
        let extract: Extract?
        let listing: ObjectListing?
        let signature: SignatureRule?
        let pieces: PieceHashes?

        /// The fields as one value, to change some of them in a copy (``with(_:)``).
        struct Fields {
            var moreURLs: [TemplatedString] = []
            var moreChecksums: [Checksum] = []
            var checksumsFrom: String?
            var dependsOn: [String] = []
            var method = Method.get
            var body: TemplatedString?
            var headers: [Header] = []
            var upload: Upload?
            var extract: Extract?
            var listing: ObjectListing?
            var signature: SignatureRule?
            var pieces: PieceHashes?
        }

        init(_ fields: Fields) {
            moreURLs = fields.moreURLs
            moreChecksums = fields.moreChecksums
            checksumsFrom = fields.checksumsFrom
            dependsOn = fields.dependsOn
            method = fields.method
            body = fields.body
            headers = fields.headers
            upload = fields.upload
            extract = fields.extract
            listing = fields.listing
            signature = fields.signature
            pieces = fields.pieces
        }

        private var fields: Fields {
            Fields(moreURLs: moreURLs, moreChecksums: moreChecksums, checksumsFrom: checksumsFrom, dependsOn: dependsOn,
                   method: method, body: body, headers: headers, upload: upload, extract: extract, listing: listing,
                   signature: signature, pieces: pieces)
        }

        static let plain = Extras(Fields())

        var isPlain: Bool {
            moreURLs.isEmpty && moreChecksums.isEmpty && checksumsFrom == nil && dependsOn.isEmpty && method == .get
                && body == nil && headers.isEmpty && upload == nil && extract == nil && listing == nil && signature == nil
                && pieces == nil
        }

        /// This box with some fields changed (a new box: a shared one is never written).
        func with(_ change: (inout Fields) -> Void) -> Extras {
            var changed = fields
            change(&changed)
            return Extras(changed)
        }
    }

    package init(
        id: String, urls: [TemplatedString], dest: TemplatedString, size: Int64? = nil, checksums: [Checksum] = [],
        checksumsFrom: String? = nil, dependsOn: [String] = [], method: Method = .get, body: TemplatedString? = nil,
        headers: [Header] = [], settings: JobSettings = JobSettings(), upload: Upload? = nil, extract: Extract? = nil,
        source: JobSource
    ) {
        self.id = id
        url = urls.first
        self.dest = dest
        storedSize = size ?? Int64.min
        checksum = checksums.first
        self.settings = settings
        self.source = source
        let extras = Extras(Extras.Fields(moreURLs: Array(urls.dropFirst()), moreChecksums: Array(checksums.dropFirst()),
                                          checksumsFrom: checksumsFrom, dependsOn: dependsOn, method: method, body: body,
                                          headers: headers, upload: upload, extract: extract))
        self.extras = extras.isPlain ? Extras.plain : extras
    }

    /// Job whose published sum file holds this job's digest.
    public var checksumsFrom: String? {
        get { extras.checksumsFrom }
        set { extras = extras.with { $0.checksumsFrom = newValue } }
    }
    /// Dependencies as written under `depends_on`.
    public var dependsOn: [String] {
        get { extras.dependsOn }
        set { extras = extras.with { $0.dependsOn = newValue } }
    }
    public var method: Method {
        get { extras.method }
        set { extras = extras.with { $0.method = newValue } }
    }
    public var body: TemplatedString? {
        get { extras.body }
        set { extras = extras.with { $0.body = newValue } }
    }
    /// Request headers: the manifest's defaults overlaid by the job's own (names compare
    /// case-insensitively).
    public var headers: [Header] {
        get { extras.headers }
        set { extras = extras.with { $0.headers = newValue } }
    }
    /// Set for an upload job: `dest` is then the file sent and the single URL the target.
    package var upload: Upload? {
        get { extras.upload }
        set { extras = extras.with { $0.upload = newValue } }
    }
    /// Set for a download job that unpacks its archive once it verified (`extract:`).
    package var extract: Extract? {
        get { extras.extract }
        set { extras = extras.with { $0.extract = newValue } }
    }
    /// Set on a job whose URL is a bucket prefix or a source: it is expanded into one job per
    /// object or file before the command builds its graph (``ObjectListing``); `dest` is then
    /// the directory.
    package var listing: ObjectListing? {
        get { extras.listing }
        set { extras = extras.with { $0.listing = newValue } }
    }

    /// Set on a checksum file's job whose signature must verify before its digests are used
    /// (`signature:`, Docs/Signatures.md).
    package var signature: SignatureRule? {
        get { extras.signature }
        set { extras = extras.with { $0.signature = newValue } }
    }

    /// The sha256 of each piece of the file (`pieces:`, or the lock's), checked as each piece is
    /// written (Docs/Mirrors.md).
    package var pieces: PieceHashes? {
        get { extras.pieces }
        set { extras = extras.with { $0.pieces = newValue } }
    }

    /// Shown (`dump`, the debugger) as its fields: whether its extras' box is shared is not part
    /// of them (a manifest loaded in pieces shares one box per piece).
    public var customMirror: Mirror {
        Mirror(self, children: [
            "id": id, "urls": urls, "dest": dest, "size": size as Any, "checksums": checksums,
            "checksumsFrom": checksumsFrom as Any, "dependsOn": dependsOn, "method": method, "body": body as Any,
            "headers": headers, "settings": settings, "upload": upload as Any, "extract": extract as Any,
            "listing": listing as Any, "signature": signature as Any, "pieces": pieces as Any,
            "source": source,
        ], displayStyle: .struct)
    }

    /// The absolute path of the job's file in `outputDirectory` (environment values resolved).
    public func destination(in outputDirectory: String) -> String {
        outputDirectory + "/" + dest.resolved
    }

    /// ``destination(in:)`` as it may be printed (environment values as `${NAME}`).
    public func printedDestination(in outputDirectory: String) -> String {
        outputDirectory + "/" + dest.redacted
    }

    /// Whether the job sends `dest` instead of fetching it.
    public var isUpload: Bool { upload != nil }

    /// Every job this one waits for: `depends_on` plus the implied `checksums_from`, in order,
    /// without repeats.
    public var dependencies: [String] {
        guard let checksumsFrom, !dependsOn.contains(checksumsFrom) else { return dependsOn }
        return dependsOn + [checksumsFrom]
    }
}

/// What an upload job sends besides its file (`form`, `content_md5`, `retry_post`). A class, so
/// that download jobs — nearly all of a large manifest — pay one pointer for it.
package final class Upload: Sendable {
    /// `form:` of a `POST`: the body is `multipart/form-data` with these text fields first and the
    /// file last.
    package struct Form: Sendable {
        package var fileField: String
        /// Nil: the source's base name.
        package var fileName: String?
        package var contentType: String
        package var fields: [Job.Header]

        package init(fileField: String = "file", fileName: String? = nil, contentType: String = "application/octet-stream",
                    fields: [Job.Header] = []) {
            self.fileField = fileField
            self.fileName = fileName
            self.contentType = contentType
            self.fields = fields
        }
    }

    package let form: Form?
    /// Send `Content-MD5` (S3 checks it, and its ETag is then the MD5 of a single-part object).
    package let contentMD5: Bool
    /// Retry a `POST` like a `PUT`; without it a `POST` is retried only when it provably never
    /// reached the server (the connection was never made).
    package let retryPost: Bool

    package init(form: Form? = nil, contentMD5: Bool = false, retryPost: Bool = false) {
        self.form = form
        self.contentMD5 = contentMD5
        self.retryPost = retryPost
    }
}

/// Source locations of a job's parts.
package struct JobSource: Sendable, CustomReflectable {
    /// The job's mapping.
    package var job: SourceLocation
    package var id: SourceLocation
    /// The `dest` value (an upload's `upload` value), or the URL it was derived from.
    package var dest: SourceLocation
    /// Where the rarer parts were written, in a box shared by every job without them.
    private var references: References

    /// One location per `depends_on` entry.
    package var dependsOn: [SourceLocation] {
        get { references.dependsOn }
        set { references = References(dependsOn: newValue, checksumsFrom: references.checksumsFrom) }
    }
    package var checksumsFrom: SourceLocation? {
        get { references.checksumsFrom }
        set { references = References(dependsOn: references.dependsOn, checksumsFrom: newValue) }
    }

    private final class References: Sendable {
        let dependsOn: [SourceLocation]
        let checksumsFrom: SourceLocation?

        init(dependsOn: [SourceLocation], checksumsFrom: SourceLocation?) {
            self.dependsOn = dependsOn
            self.checksumsFrom = checksumsFrom
        }

        static let none = References(dependsOn: [], checksumsFrom: nil)
    }

    package init(job: SourceLocation, id: SourceLocation, dest: SourceLocation, dependsOn: [SourceLocation] = [],
                checksumsFrom: SourceLocation? = nil) {
        self.job = job
        self.id = id
        self.dest = dest
        references = dependsOn.isEmpty && checksumsFrom == nil ? .none
            : References(dependsOn: dependsOn, checksumsFrom: checksumsFrom)
    }

    /// Shown as its locations: whether the box of the rarer ones is shared is not part of them.
    package var customMirror: Mirror {
        Mirror(self, children: ["job": job, "id": id, "dest": dest, "dependsOn": dependsOn, "checksumsFrom": checksumsFrom as Any],
               displayStyle: .struct)
    }
}

/// Per-job transfer settings; every one may be given under `defaults` and overridden per job.
///
/// A value type whose fields live in one shared, copy-on-write box: the jobs of a manifest
/// nearly all take the `defaults` unchanged, so they share one box instead of each carrying
/// about 130 bytes of the same settings. A job that overrides a field gets a box of its own
/// when it is written.
package struct JobSettings: Sendable, Equatable, CustomReflectable {
    package enum Segments: Sendable, Equatable {
        case auto
        case count(Int)

        /// Connections `auto` uses for a large file (at most `per_host`).
        package static let autoCount = 4
    }

    /// `sources:` — `first`: one mirror at a time, the next on failure; `all`: a segmented
    /// download's connections spread over every mirror at once (with proof of one content).
    package enum Sources: String, Sendable, CaseIterable {
        case first
        case all
    }

    package enum Refresh: String, Sendable, CaseIterable {
        case never
        case ifChanged = "if-changed"
        case always
    }

    /// The fields, as they are held in the box.
    struct Values: Sendable, Equatable {
        var retries = 4
        var backoff = 1.0
        var backoffMax = 60.0
        var retryAfterMax = 300.0
        var timeout = 30.0
        var deadline: Double?
        var segments = Segments.auto
        var sources = Sources.first
        var refresh = Refresh.never
        var allowInsecureRedirect = false
        var crossOriginHeaders: [String] = []
        var netrc = false
        var tls = TLSSettings()
        var s3 = S3Settings()
        var requestsPerSecond: Int?
        var requestBurst = 1
        var acceptHTML = false
        var repositories = RepositoryEndpoints()
    }

    /// Immutable, so sharing it across threads needs no lock: a write makes a new box.
    private final class Box: Sendable {
        let values: Values

        init(_ values: Values) {
            self.values = values
        }
    }

    /// Every `JobSettings()` starts from this one box.
    private static let defaultBox = Box(Values())

    private var box: Box

    package init() {
        box = Self.defaultBox
    }

    /// The fields; a write puts them in a new box of this struct's own (a job overrides a few
    /// fields at most, each written once while the manifest is decoded).
    private var values: Values {
        get { box.values }
        set { box = Box(newValue) }
    }

    package static func == (left: JobSettings, right: JobSettings) -> Bool {
        left.box === right.box || left.box.values == right.box.values
    }

    /// Shown (`dump`, the debugger) as its values: whether a box is shared is not part of them.
    package var customMirror: Mirror {
        Mirror(reflecting: box.values)
    }

    /// Extra attempts per mirror after the first.
    package var retries: Int {
        get { box.values.retries }
        set { values.retries = newValue }
    }
    /// Exponential backoff base, in seconds.
    package var backoff: Double {
        get { box.values.backoff }
        set { values.backoff = newValue }
    }
    /// Upper bound of one backoff wait, in seconds.
    package var backoffMax: Double {
        get { box.values.backoffMax }
        set { values.backoffMax = newValue }
    }
    /// Longest `Retry-After` honoured, in seconds: a server asking for a longer wait fails over
    /// to the next mirror instead of holding the run (and its lock) for hours.
    package var retryAfterMax: Double {
        get { box.values.retryAfterMax }
        set { values.retryAfterMax = newValue }
    }
    /// Idle timeout: no bytes for this long fails the attempt. Seconds.
    package var timeout: Double {
        get { box.values.timeout }
        set { values.timeout = newValue }
    }
    /// Total time allowed for the job, in seconds.
    package var deadline: Double? {
        get { box.values.deadline }
        set { values.deadline = newValue }
    }
    package var segments: Segments {
        get { box.values.segments }
        set { values.segments = newValue }
    }
    /// Whether a segmented download draws from one mirror at a time or from all at once.
    package var sources: Sources {
        get { box.values.sources }
        set { values.sources = newValue }
    }
    package var refresh: Refresh {
        get { box.values.refresh }
        set { values.refresh = newValue }
    }
    package var allowInsecureRedirect: Bool {
        get { box.values.allowInsecureRedirect }
        set { values.allowInsecureRedirect = newValue }
    }
    /// Header names (lowercased) still sent after a redirect to another origin; by default
    /// `Authorization`, `Proxy-Authorization` and `Cookie` are dropped there, as curl does.
    package var crossOriginHeaders: [String] {
        get { box.values.crossOriginHeaders }
        set { values.crossOriginHeaders = newValue }
    }
    /// Requests to the job's host start one every 1/N second (all jobs to that host share the
    /// pace); nil: no pacing beyond `per_host`.
    package var requestsPerSecond: Int? {
        get { box.values.requestsPerSecond }
        set { values.requestsPerSecond = newValue }
    }
    /// How many starts under `requests_per_second` may go at once after a quiet spell (`burst`,
    /// as nginx's `limit_req` counts it; 1: none).
    package var requestBurst: Int {
        get { box.values.requestBurst }
        set { values.requestBurst = newValue }
    }
    /// Look up Basic credentials for the mirrors' hosts in `.netrc` (`NETRC`, else `~/.netrc`).
    package var netrc: Bool {
        get { box.values.netrc }
        set { values.netrc = newValue }
    }
    package var tls: TLSSettings {
        get { box.values.tls }
        set { values.tls = newValue }
    }
    /// Whether an HTML page may be the file (`accept_html`); by default a job without a pinned
    /// checksum that receives one fails `unexpected_html` (Docs/Sources.md).
    package var acceptHTML: Bool {
        get { box.values.acceptHTML }
        set { values.acceptHTML = newValue }
    }
    /// The repositories' API endpoints this job's sources use (`hf:`, `zenodo:`, `figshare:`).
    package var repositories: RepositoryEndpoints {
        get { box.values.repositories }
        set { values.repositories = newValue }
    }
    /// How `s3://` and `gs://` URLs are reached (`s3:`).
    package var s3: S3Settings {
        get { box.values.s3 }
        set { values.s3 = newValue }
    }
}

/// Certificates for HTTPS beyond the system's trust store (`tls:` in the manifest). Paths are
/// absolute (relative ones are resolved against the manifest's directory when decoding).
package struct TLSSettings: Sendable, Hashable {
    /// PEM bundle of the CAs to trust instead of the system store, as curl's `--cacert`.
    package var caFile: String?
    /// PEM client certificate (chain) and its key, for servers that require mutual TLS.
    package var clientCertificate: String?
    package var clientKey: String?

    package init(caFile: String? = nil, clientCertificate: String? = nil, clientKey: String? = nil) {
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// Whether anything differs from the system defaults.
    package var isDefault: Bool { self == TLSSettings() }
}
