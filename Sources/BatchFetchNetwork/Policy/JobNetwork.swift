import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// How one job talks to the network, for every command that does (run, pin, check): the
/// transport its TLS settings need, what each request carries (``CredentialPolicy``), which
/// redirects and retries it accepts (``RedirectPolicy``, ``RetryPolicy``), and how its secrets
/// are hidden in everything printed (``Redactor``). Built once per job from the manifest, so the
/// download engine and the mirror probe cannot disagree.
package struct JobNetwork: Sendable {
    package let transport: any HTTPTransport
    package let credentials: CredentialPolicy
    package let redirect: RedirectPolicy
    package var retry: RetryPolicy
    package let redactor: Redactor
    /// The job's mirrors, parsed once (URLs as the manifest resolved them, userinfo included), in
    /// order; nil for one that does not parse (validation refuses those, so only a library caller
    /// could pass one). The download's state machine and the probe both use these.
    package let mirrors: [MirrorURL?]
    /// What a download request carries besides headers: the job's method, body and idle timeout.
    package let method: String
    package let body: Data?
    package let timeout: Double
    /// The job's `requests_per_second`, carried by every request it makes.
    package let requestsPerSecond: Int?
    package let requestBurst: Int
    /// The job's `retry_after_max`: also the longest wait for a host's quota to reset.
    package let longestPace: Double

    /// `transport` is the run's; a job with an https mirror and its own TLS trust or a client
    /// certificate (or with `CURL_CA_BUNDLE`, `SSL_CERT_FILE` or `SSL_CERT_DIR` naming other
    /// than the system's) uses the AsyncHTTPClient transport configured for it, since URLSession
    /// on Linux cannot take either (``TLSOptions``). An http mirror redirected to https keeps
    /// the run's transport and the system's trust.
    package init(job: Job, transport: any HTTPTransport, perHost: Int, environment: [String: String]) {
        // "https:" in any case, without a lowercased copy of every URL.
        let https = job.urls.contains { $0.resolved.utf8.prefix(6).lazy.map { $0 | 0x20 }.elementsEqual("https:".utf8) }
        if https, let tls = TLSOptions(job.settings.tls, environment: environment) {
            self.transport = AsyncHTTPClientTransport.shared(maximumConnectionsPerHost: perHost, tls: tls)
        } else {
            self.transport = transport
        }
        let netrc = job.settings.netrc ? Netrc.load(environment: environment) : nil
        var headers: [(name: String, value: TemplatedString)] = []
        headers.reserveCapacity(job.headers.count + 1)
        for header in job.headers { headers.append((header.name, header.value)) }
        if !headers.contains(where: { $0.name.lowercased() == "user-agent" }) {
            headers.append((name: "User-Agent", value: Self.userAgent))
        }
        credentials = CredentialPolicy(headers: headers, crossOrigin: job.settings.crossOriginHeaders, netrc: netrc)
        let mirrors = job.urls.map { MirrorURL($0, s3: job.settings.s3, environment: environment) }
        self.mirrors = mirrors
        let netrcPasswords = netrc.map { netrc in
            mirrors.compactMap { mirror in
                mirror?.url.host.flatMap { netrc.credentials(forHost: $0) }
                    .map { TemplatedString.Secret(name: "NETRC_PASSWORD", value: $0.password) }
            }
        } ?? []
        // A store's secret key never leaves the signer, but a session token is a header.
        var storeSecrets: [TemplatedString.Secret] = []
        for credentials in mirrors.compactMap({ $0?.signer?.credentials }) {
            storeSecrets.append(.init(name: "AWS_SECRET_ACCESS_KEY", value: credentials.secretAccessKey))
            if let token = credentials.sessionToken { storeSecrets.append(.init(name: "AWS_SESSION_TOKEN", value: token)) }
        }
        redactor = job.redactor(extra: netrcPasswords + storeSecrets)
        redirect = RedirectPolicy(allowInsecure: job.settings.allowInsecureRedirect, redactor: redactor)
        retry = RetryPolicy(job.settings)
        method = job.method.rawValue
        body = job.body.map { Data($0.resolved.utf8) }
        timeout = job.settings.timeout
        requestsPerSecond = job.settings.requestsPerSecond
        requestBurst = job.settings.requestBurst
        longestPace = job.settings.retryAfterMax
    }

    /// How a request to a store's mirror goes out.
    package enum StoreRequest: Equatable {
        /// Not to the store (a redirect elsewhere): a plain request, nothing of the store's.
        case elsewhere
        /// To the store, unsigned (`anonymous`).
        case anonymous
        /// To the store, signed so.
        case signed(SigV4Signer)
    }

    /// How a request to `target` on behalf of the store mirror `mirror` goes: to the mirror at
    /// its own origin, as the mirror is signed; to AWS's endpoint of the same bucket in another
    /// region (https only), signed for that region; anywhere else as a plain request.
    package static func storeRequest(to target: URL, of mirror: MirrorURL) -> StoreRequest {
        let signer: SigV4Signer?
        if let origin = Origin(target), origin == Origin(mirror.url) {
            signer = mirror.signer
        } else if target.scheme?.lowercased() == "https", let targetHost = target.host, let mirrorHost = mirror.url.host,
                  let moved = AWSConfiguration.awsEndpoint(targetHost), let original = AWSConfiguration.awsEndpoint(mirrorHost),
                  moved.bucket == original.bucket {
            signer = mirror.signer.map { SigV4Signer(credentials: $0.credentials, region: moved.region, service: $0.service) }
        } else {
            return .elsewhere
        }
        return signer.map(StoreRequest.signed) ?? .anonymous
    }

    /// Sent unless the job sets its own.
    private static let userAgent = TemplatedString(literal: "batchfetch/\(ToolVersion.current)")

    /// The download request the state machine planned: the job's method, headers and body, plus
    /// `Range`/`If-Range` and the conditional headers of `refresh: if-changed`.
    package func request(for planned: PlannedRequest) -> TransportRequest {
        var headers: [(name: String, value: String)] = []
        if let range = planned.rangeHeader {
            headers.append((name: "Range", value: range))
            if let ifRange = planned.ifRange { headers.append((name: "If-Range", value: ifRange)) }
        }
        if let etag = planned.ifNoneMatch { headers.append((name: "If-None-Match", value: etag)) }
        if let date = planned.ifModifiedSince { headers.append((name: "If-Modified-Since", value: date)) }
        return request(planned.url, mirrorIndex: planned.mirrorIndex, method: method, extra: headers, body: body, timeout: timeout)
    }

    /// The transport request for `target`, asked on behalf of mirror `mirrorIndex`: the job's
    /// method and body, the headers the credential policy allows there, plus `extra`.
    package func request(_ target: URL, mirrorIndex: Int, method: String, extra: [(name: String, value: String)] = [],
                 body: Data? = nil, timeout: Double) -> TransportRequest {
        let mirror = mirrors.indices.contains(mirrorIndex) ? mirrors[mirrorIndex] : nil
        let (url, headers) = credentials.request(to: target, forMirror: mirror?.url)
        var request = TransportRequest(url: url, method: method, headers: headers + extra, body: body, timeout: timeout + 30)
        request.requestsPerSecond = requestsPerSecond
        request.requestBurst = requestBurst
        request.longestPace = longestPace
        // Signed only where the signature is meant for: the store's endpoint, or AWS's endpoint
        // of the same bucket in the region a 301 named (signed for that region). A redirect
        // anywhere else goes unsigned.
        if let mirror, mirror.store != nil {
            let store = Self.storeRequest(to: target, of: mirror)
            if case .signed(let signer) = store { request.signer = signer }
            if store != .elsewhere, method == "GET" || method == "HEAD" {
                request.headers.append((name: "x-amz-checksum-mode", value: "ENABLED"))
            }
        }
        return request
    }
}
