import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// Lists one source: the thin I/O around ``RepositoryAPI``'s pure requests and readers, and
/// the external resolver's process (Docs/Sources.md). API calls are requests of the source
/// job made through ``MirrorProbe``: the same host limits, redirect and credential rules,
/// retries, `Retry-After` and request pacing as its downloads. Every way listing can fail is a
/// `resolver_failed` of the source job naming the source and what went wrong.
struct SourceResolution: Sendable {
    let job: Job
    let reference: SourceReference
    let manifest: Manifest
    let transport: any HTTPTransport
    let hosts: HostLimiter
    /// The repositories' tokens, for API calls to their own origins.
    let credentials: SourceCredentials
    let environment: [String: String]

    /// An API answer is read whole, up to this many bytes (a Hub tree page of 1,000 files is
    /// about 250 KB).
    static let answerLimit = 64 << 20

    private var endpoints: RepositoryAPI.Endpoints { RepositoryAPI.Endpoints(job.settings.repositories, environment: environment) }
    private var shown: String { job.url?.redacted ?? "" }

    /// The listing, and the path or glob inside the repository that selects its files.
    func resolve() async -> Result<(listing: SourceListing, path: String?), BatchFetchError> {
        await resolve(reference, followedDOI: false)
    }

    private func resolve(_ reference: SourceReference, followedDOI: Bool) async -> Result<(listing: SourceListing, path: String?), BatchFetchError> {
        switch reference {
        case .huggingFace(let repo):
            return await hub(repo).map { ($0, repo.path) }
        case .zenodo(let record, let path):
            return await answer(RepositoryAPI.zenodoRecordURL(record, endpoint: endpoints.zenodo), what: "Zenodo record \(record)")
                .flatMap { data in
                    RepositoryAPI.zenodoRecord(data, record: record).map { .success(($0, path)) }
                        ?? .failure(failed("the answer for Zenodo record \(record) is not a record with files"))
                }
        case .figshare(let article, let path):
            return await answer(RepositoryAPI.figshareArticleURL(article, endpoint: endpoints.figshare), what: "figshare article \(article)")
                .flatMap { data in
                    RepositoryAPI.figshareArticle(data, article: article).map { .success(($0, path)) }
                        ?? .failure(failed("the answer for figshare article \(article) is not an article with files"))
                }
        case .doi(let doi):
            guard !followedDOI else { return .failure(failed("doi:\(doi) leads to another DOI")) }
            let found = await answer(RepositoryAPI.doiHandleURL(doi, endpoint: endpoints.doi), what: "DOI \(doi)")
            switch found {
            case .failure(let failure):
                return .failure(failure)
            case .success(let data):
                guard let landing = RepositoryAPI.doiLanding(data) else {
                    return .failure(failed("the handle answer for doi:\(doi) has no URL"))
                }
                guard let target = RepositoryAPI.repository(ofLanding: landing, endpoints: endpoints) else {
                    return .failure(BatchFetchError(.unsupportedDOI, "doi:\(doi) lands on \(landing), which is not a repository "
                        + "batchfetch reads (Zenodo at \(endpoints.zenodo), figshare at \(endpoints.figshare))"))
                }
                return await resolve(target, followedDOI: true)
            }
        case .external(let name, let url):
            guard let resolver = manifest.resolvers[name] else { return .failure(failed("no resolver is named '\(name)'")) }
            switch await ResolverProcess.run(resolver.command + [url], timeout: resolver.timeout) {
            case .failure(let reason):
                return .failure(failed("resolver '\(name)' \(reason.message)"))
            case .success(let output):
                return RepositoryAPI.resolverOutput(output).map { ($0, nil) }.mapError { failed("resolver '\(name)': \($0.message)") }
            }
        }
    }

    /// A Hub repository: its revision pinned to a commit, then every page of its tree under the
    /// path's directory.
    private func hub(_ repo: SourceReference.HubRepository) async -> Result<SourceListing, BatchFetchError> {
        let endpoint = endpoints.hf
        let commit: String
        switch await answer(RepositoryAPI.hubRevisionURL(repo, endpoint: endpoint), what: "revision '\(repo.revision)' of \(repo.id)") {
        case .failure(let failure): return .failure(failure)
        case .success(let data):
            guard let sha = RepositoryAPI.hubCommit(data) else {
                return .failure(failed("the answer for revision '\(repo.revision)' of \(repo.id) has no commit sha"))
            }
            commit = sha
        }
        // A plain path may be a file: its directory is listed. A glob: its directory part.
        let selection = SourceReference.Selection(path: repo.path)
        let directory = repo.path == selection.base
            ? String(selection.base.split(separator: "/").dropLast().joined(separator: "/")) : selection.base
        var next = RepositoryAPI.hubTreeURL(repo, commit: commit, base: directory, endpoint: endpoint)
        var files: [ListedFile] = []
        var pages = 0
        while let url = next {
            pages += 1
            switch await answer(url, what: "the tree of \(repo.id) at \(commit)", withHead: true) {
            case .failure(let failure):
                return .failure(failure)
            case .success(let (data, head)):
                guard let page = RepositoryAPI.hubTreePage(data, repo: repo, commit: commit, endpoint: endpoint) else {
                    return .failure(failed("page \(pages) of the tree of \(repo.id) is not a list of files"))
                }
                files += page
                next = RepositoryAPI.nextLink(head?.header("link"), base: url)
                if let target = next, target == url { return .failure(failed("page \(pages) of the tree of \(repo.id) links to itself")) }
            }
        }
        return .success(SourceListing(revision: commit, files: files))
    }

    /// The body of one API answer.
    private func answer(_ url: URL?, what: String) async -> Result<Data, BatchFetchError> {
        await answer(url, what: what, withHead: false).map(\.data)
    }

    private func answer(_ url: URL?, what: String, withHead: Bool) async -> Result<(data: Data, head: TransportResponseHead?), BatchFetchError> {
        guard let url else { return .failure(failed("cannot make the API URL for \(what)")) }
        var request = job
        request.listing = nil
        request.urls = [TemplatedString(literal: url.absoluteString)]
        if let header = credentials.header(for: url.absoluteString) {
            request.headers.append(header)
        }
        let network = JobNetwork(job: request, transport: transport, perHost: manifest.perHost, environment: environment)
        let probe = MirrorProbe(job: request, network: network, hosts: hosts)
        return await probe.fetchResponse(mirror: 0, limit: Self.answerLimit).mapError { failure in
            let reason = failure.message.hasPrefix("HTTP 404") || failure.message.hasPrefix("HTTP 410") ? "not found (\(failure.message))" : failure.message
            return failed("\(what): \(network.redactor.redact(reason))")
        }
    }

    private func failed(_ message: String) -> BatchFetchError {
        BatchFetchError(.resolverFailed, "\(shown): \(message)")
    }
}

/// The repositories' tokens, each sent only to its own repository's origin (Docs/Sources.md,
/// "Tokens"): `HF_TOKEN` (else the file `HF_TOKEN_PATH`, else `$HF_HOME/token`, else
/// `~/.cache/huggingface/token`) to the Hub's endpoint, `ZENODO_TOKEN` to Zenodo's. Sent as
/// `Authorization: Bearer` with the value marked as a secret, so the credential policy drops
/// it on a redirect to another origin (a CDN) and every report shows `${HF_TOKEN}`. A job that
/// sets its own `Authorization` keeps it.
struct SourceCredentials: Sendable {
    private var tokens: [(origin: Origin, header: Job.Header)] = []

    init(job: Job, environment: [String: String]) {
        guard job.listing?.reference != nil,
              !job.headers.contains(where: { $0.name.lowercased() == "authorization" }) else { return }
        let endpoints = RepositoryAPI.Endpoints(job.settings.repositories, environment: environment)
        if let token = Self.hubToken(environment), let origin = URL(string: endpoints.hf).flatMap(Origin.init) {
            tokens.append((origin, Self.bearer(token, name: "HF_TOKEN")))
        }
        if let token = environment["ZENODO_TOKEN"], !token.isEmpty, let origin = URL(string: endpoints.zenodo).flatMap(Origin.init) {
            tokens.append((origin, Self.bearer(token, name: "ZENODO_TOKEN")))
        }
    }

    /// The token header for a request to `url`, when it goes to a repository's own origin.
    func header(for url: String) -> Job.Header? {
        guard !tokens.isEmpty, let origin = URL(string: url).flatMap(Origin.init) else { return nil }
        return tokens.first { $0.origin == origin }?.header
    }

    private static func bearer(_ token: String, name: String) -> Job.Header {
        Job.Header(name: "Authorization", value: TemplatedString(parts: [.literal("Bearer "), .environment(name: name, value: token)]))
    }

    /// The Hub's token as huggingface_hub finds it.
    static func hubToken(_ environment: [String: String]) -> String? {
        if let token = environment["HF_TOKEN"], !token.isEmpty { return token }
        let home = environment["HF_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.cache/huggingface" }
        let path = environment["HF_TOKEN_PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? home.map { $0 + "/token" }
        guard let path, let data = FileManager.default.contents(atPath: path) else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }
}
