import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// One file a source lists: its path in the repository, where it is fetched from, and the size
/// and digests the repository publishes for it.
struct ListedFile: Sendable, Equatable {
    var path: String
    var url: String
    var size: Int64?
    var checksums: [Checksum]
}

/// What resolving a source found: the revision it listed (pinned into the lock) and its files.
struct SourceListing: Sendable, Equatable {
    var revision: String
    var files: [ListedFile]
}

/// The repositories' APIs as pure functions: the URLs to ask and how to read their answers
/// (Docs/Sources.md, "Repository APIs"). No I/O here: ``SourceResolution`` performs the
/// requests with the job's network rules; the fakes in the tests answer as the documents
/// cited below describe.
enum RepositoryAPI {
    /// The endpoints a job's sources use: the manifest's (`hf: {endpoint}`…), else the
    /// environment's, else the public services.
    struct Endpoints: Sendable, Equatable {
        var hf: String
        var zenodo: String
        var figshare: String
        var doi: String

        init(_ settings: RepositoryEndpoints, environment: [String: String]) {
            func pick(_ manifest: String?, _ variable: String, _ fallback: String) -> String {
                let chosen = manifest ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
                return chosen.hasSuffix("/") ? String(chosen.dropLast()) : chosen
            }
            hf = pick(settings.hf, "HF_ENDPOINT", "https://huggingface.co")
            zenodo = pick(settings.zenodo, "ZENODO_ENDPOINT", "https://zenodo.org")
            figshare = pick(settings.figshare, "FIGSHARE_ENDPOINT", "https://api.figshare.com")
            doi = pick(nil, "DOI_ENDPOINT", "https://doi.org")
        }
    }

    /// A path segment percent-encoded as huggingface_hub's `quote(…, safe="")` does: every byte
    /// but RFC 3986's unreserved ones, which is S3's `UriEncode` (``SigV4Signer/encode(_:keepSlash:)``).
    static func segment(_ text: String) -> String {
        SigV4Signer.encode(text, keepSlash: false)
    }

    /// A path inside a repository, each segment encoded, `/` kept.
    static func path(_ text: String) -> String {
        SigV4Signer.encode(text, keepSlash: true)
    }

    // MARK: - Hugging Face Hub

    /// `GET {endpoint}/api/{kind}/{id}/revision/{rev}`: the repository at a branch, tag or commit,
    /// whose `sha` pins it (huggingface_hub `HfApi.repo_info`).
    static func hubRevisionURL(_ repo: SourceReference.HubRepository, endpoint: String) -> URL? {
        URL(string: "\(endpoint)/api/\(repo.kind.rawValue)/\(repo.id)/revision/\(segment(repo.revision))")
    }

    /// The commit in a revision answer (`{"sha": "…", …}`): 40 hex digits, else nil.
    static func hubCommit(_ data: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let sha = object["sha"] as? String,
              sha.utf8.count == 40, sha.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return sha
    }

    /// `GET {endpoint}/api/{kind}/{id}/tree/{sha}[/{base}]?recursive=true`: the files under
    /// `base` at a commit, one page (huggingface_hub `HfApi.list_repo_tree`, paginated by `Link`).
    static func hubTreeURL(_ repo: SourceReference.HubRepository, commit: String, base: String, endpoint: String) -> URL? {
        URL(string: "\(endpoint)/api/\(repo.kind.rawValue)/\(repo.id)/tree/\(commit)" + (base.isEmpty ? "" : "/" + path(base))
            + "?recursive=true")
    }

    /// `{endpoint}/{""|datasets/|spaces/}{id}/resolve/{sha}/{path}`: where a file is fetched (it
    /// may redirect to a CDN on another host, which never gets the token).
    static func hubFileURL(_ repo: SourceReference.HubRepository, commit: String, path file: String, endpoint: String) -> String {
        "\(endpoint)/\(repo.kind.filePrefix)\(repo.id)/resolve/\(commit)/\(path(file))"
    }

    private struct HubEntry: Decodable {
        struct LFS: Decodable {
            var oid: String
            var size: Int64
        }

        var type: String
        var path: String
        var size: Int64?
        var oid: String?
        var lfs: LFS?
    }

    /// The files of one tree page (a JSON array of `{"type": "file"|"directory", "path", "size",
    /// "oid", "lfs"?: {"oid", "size"}}`): an LFS file checked by its sha256, any other by its git
    /// blob id (`git-sha1`). Nil when the answer is not such an array or a digest is malformed.
    static func hubTreePage(_ data: Data, repo: SourceReference.HubRepository, commit: String, endpoint: String) -> [ListedFile]? {
        guard let entries = try? JSONDecoder().decode([HubEntry].self, from: data) else { return nil }
        var files: [ListedFile] = []
        files.reserveCapacity(entries.count)
        for entry in entries where entry.type == "file" {
            let checksum: Checksum
            let size: Int64?
            if let lfs = entry.lfs {
                guard case .success(let parsed) = Checksum.parse("sha256:" + lfs.oid) else { return nil }
                (checksum, size) = (parsed, lfs.size)
            } else {
                guard let oid = entry.oid, entry.size != nil, case .success(let parsed) = Checksum.parse("git-sha1:" + oid) else { return nil }
                (checksum, size) = (parsed, entry.size)
            }
            files.append(ListedFile(path: entry.path, url: hubFileURL(repo, commit: commit, path: entry.path, endpoint: endpoint),
                                    size: size, checksums: [checksum]))
        }
        return files
    }

    /// The `rel="next"` target of an RFC 8288 `Link` header, resolved against `base`.
    static func nextLink(_ header: String?, base: URL) -> URL? {
        guard let header else { return nil }
        for link in header.split(separator: ",") {
            let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">") else { continue }
            let isNext = parts.dropFirst().contains { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                return pair.count == 2 && pair[0].lowercased() == "rel"
                    && pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).split(separator: " ").contains("next")
            }
            if isNext { return URL(string: String(target.dropFirst().dropLast()), relativeTo: base)?.absoluteURL }
        }
        return nil
    }

    // MARK: - Zenodo

    /// `GET {endpoint}/api/records/{id}` (Zenodo REST API, "Records": InvenioRDM's record).
    static func zenodoRecordURL(_ record: String, endpoint: String) -> URL? {
        URL(string: "\(endpoint)/api/records/\(record)")
    }

    private struct ZenodoRecord: Decodable {
        struct File: Decodable {
            struct Links: Decodable {
                var `self`: String
            }

            var key: String
            var size: Int64?
            var checksum: String?
            var links: Links
        }

        var id: IntOrString?
        var revision: Int?
        var files: [File]?
    }

    /// A record's files (`files: [{"key", "size", "checksum": "md5:HEX", "links": {"self"}}]`),
    /// each verified by its md5; the revision is `RECORD@REVISION` (the record id and its
    /// `revision`, as a DOI may name the record only through the handle).
    static func zenodoRecord(_ data: Data, record: String) -> SourceListing? {
        guard let decoded = try? JSONDecoder().decode(ZenodoRecord.self, from: data), let entries = decoded.files else { return nil }
        var files: [ListedFile] = []
        for file in entries {
            var checksums: [Checksum] = []
            if let text = file.checksum {
                guard case .success(let parsed) = Checksum.parse(text.lowercased()) else { return nil }
                checksums.append(parsed)
            }
            files.append(ListedFile(path: file.key, url: file.links.`self`, size: file.size, checksums: checksums))
        }
        return SourceListing(revision: record + (decoded.revision.map { "@\($0)" } ?? ""), files: files)
    }

    // MARK: - figshare

    /// `GET {endpoint}/v2/articles/{id}` (figshare API v2, "Public articles").
    static func figshareArticleURL(_ article: String, endpoint: String) -> URL? {
        URL(string: "\(endpoint)/v2/articles/\(article)")
    }

    private struct FigshareArticle: Decodable {
        struct File: Decodable {
            var name: String
            var size: Int64?
            var computed_md5: String?
            var download_url: String
        }

        var version: Int?
        var files: [File]?
    }

    /// An article's files (`files: [{"name", "size", "computed_md5", "download_url"}]`); the
    /// revision is `ARTICLE@VERSION`.
    static func figshareArticle(_ data: Data, article: String) -> SourceListing? {
        guard let decoded = try? JSONDecoder().decode(FigshareArticle.self, from: data), let entries = decoded.files else { return nil }
        var files: [ListedFile] = []
        for file in entries {
            var checksums: [Checksum] = []
            if let md5 = file.computed_md5, !md5.isEmpty {
                guard case .success(let parsed) = Checksum.parse("md5:" + md5) else { return nil }
                checksums.append(parsed)
            }
            files.append(ListedFile(path: file.name, url: file.download_url, size: file.size, checksums: checksums))
        }
        return SourceListing(revision: article + (decoded.version.map { "@\($0)" } ?? ""), files: files)
    }

    // MARK: - DOIs

    /// `GET {endpoint}/api/handles/{doi}` (DOI Foundation, "REST API": the handle's values).
    static func doiHandleURL(_ doi: String, endpoint: String) -> URL? {
        URL(string: "\(endpoint)/api/handles/\(path(doi))")
    }

    /// The landing page of a handle answer: its first value of type `URL`.
    static func doiLanding(_ data: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let values = object["values"] as? [[String: Any]] else { return nil }
        for value in values where (value["type"] as? String) == "URL" {
            if let inner = value["data"] as? [String: Any], let url = inner["value"] as? String { return url }
        }
        return nil
    }

    /// The repository a DOI's landing page is on, or nil: `…/records/N` or `…/record/N` on the
    /// Zenodo endpoint's host and port is `zenodo:N`; `…/articles/…/N[/VERSION]` on figshare's
    /// (for the public API, `figshare.com` and `*.figshare.com`) is `figshare:N`.
    static func repository(ofLanding landing: String, endpoints: Endpoints) -> SourceReference? {
        guard let url = URL(string: landing), let host = url.host?.lowercased() else { return nil }
        let segments = url.path.split(separator: "/").map(String.init)
        func sameOrigin(_ endpoint: String) -> Bool {
            guard let other = URL(string: endpoint), let otherHost = other.host?.lowercased() else { return false }
            return host == otherHost && Origin(url)?.port == Origin(other)?.port
        }
        let numeric = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        if sameOrigin(endpoints.zenodo), segments.count == 2, segments[0] == "records" || segments[0] == "record", numeric(segments[1]) {
            return .zenodo(record: segments[1], path: nil)
        }
        let figshareHost = endpoints.figshare == "https://api.figshare.com"
            ? host == "figshare.com" || host.hasSuffix(".figshare.com") : sameOrigin(endpoints.figshare)
        if figshareHost, segments.first == "articles", segments.count >= 3 {
            let tail = segments.suffix(2)
            let id = numeric(tail.first!) && numeric(tail.last!) && segments.count >= 4 ? tail.first! : tail.last!
            if numeric(id) { return .figshare(article: id, path: nil) }
        }
        return nil
    }

    // MARK: - External resolvers

    private struct ResolverOutput: Decodable {
        struct File: Decodable {
            var url: String
            var path: String
            var size: Int64?
            var checksums: [String: String]?
        }

        var version: Int
        var revision: String?
        var files: [File]
    }

    /// What an external resolver printed (`{"version": 1, "revision", "files": [{"url", "path",
    /// "size"?, "checksums"?: {"sha256": …}}]}`), or why it is not that.
    static func resolverOutput(_ data: Data) -> Result<SourceListing, SourceProblem> {
        let decoded: ResolverOutput
        do {
            decoded = try JSONDecoder().decode(ResolverOutput.self, from: data)
        } catch {
            let start = String(decoding: data.prefix(60), as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            return .failure(SourceProblem("its output is not the resolver JSON (\"\(start)\"…)"))
        }
        guard decoded.version == 1 else { return .failure(SourceProblem("its output has version \(decoded.version); batchfetch reads version 1")) }
        var files: [ListedFile] = []
        for file in decoded.files {
            guard let url = URL(string: file.url), ["http", "https"].contains(url.scheme?.lowercased()), url.host?.isEmpty == false else { return .failure(SourceProblem("file '\(file.path)': '\(file.url)' is not an http(s) URL")) }
            if let size = file.size, size < 0 { return .failure(SourceProblem("file '\(file.path)': negative size")) }
            var checksums: [Checksum] = []
            for (name, hex) in (file.checksums ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard case .success(let parsed) = Checksum.parse("\(name):\(hex)") else {
                    return .failure(SourceProblem("file '\(file.path)': '\(name):\(hex)' is not a checksum"))
                }
                checksums.append(parsed)
            }
            files.append(ListedFile(path: file.path, url: file.url, size: file.size, checksums: checksums))
        }
        return .success(SourceListing(revision: decoded.revision ?? "", files: files))
    }
}

/// A JSON value that is a number or a string (Zenodo's ids are numbers in records, strings in
/// some older answers).
private enum IntOrString: Decodable {
    case int(Int)
    case string(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int.self) { self = .int(value) } else { self = .string(try container.decode(String.self)) }
    }
}
