@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The repositories' APIs read without sockets (Docs/Sources.md): the URLs asked and how each
/// answer becomes files. The answers are shaped as the APIs document them (the same shapes
/// Tests/Support/fake_repos.py serves; its comments cite the documents).
@Suite struct RepositoryAPITests {
    let repo = SourceReference.HubRepository(kind: .datasets, id: "acme/set", revision: "refs/pr/1", path: "data/*.csv")
    let commit = String(repeating: "a", count: 40)

    @Test func hubURLsEncodeRevisionAndPathsAsTheHubClientDoes() {
        #expect(RepositoryAPI.hubRevisionURL(repo, endpoint: "https://hub")?.absoluteString
            == "https://hub/api/datasets/acme/set/revision/refs%2Fpr%2F1")
        #expect(RepositoryAPI.hubTreeURL(repo, commit: commit, base: "data dir", endpoint: "https://hub")?.absoluteString
            == "https://hub/api/datasets/acme/set/tree/\(commit)/data%20dir?recursive=true")
        #expect(RepositoryAPI.hubFileURL(repo, commit: commit, path: "a b/c#d.csv", endpoint: "https://hub")
            == "https://hub/datasets/acme/set/resolve/\(commit)/a%20b/c%23d.csv")
        let model = SourceReference.HubRepository(kind: .models, id: "acme/m", revision: "main", path: nil)
        #expect(RepositoryAPI.hubFileURL(model, commit: commit, path: "x", endpoint: "https://hub") == "https://hub/acme/m/resolve/\(commit)/x")
    }

    @Test func aTreePageGivesLFSFilesBySHA256AndOthersByBlobID() throws {
        let page = Data("""
            [{"type": "directory", "oid": "\(String(repeating: "0", count: 40))", "size": 0, "path": "data"},
             {"type": "file", "oid": "\(String(repeating: "b", count: 40))", "size": 12, "path": "data/small.csv"},
             {"type": "file", "oid": "\(String(repeating: "c", count: 40))", "size": 134, "path": "data/big.csv",
              "lfs": {"oid": "\(String(repeating: "d", count: 64))", "size": 5000000, "pointerSize": 134}}]
            """.utf8)
        let files = try #require(RepositoryAPI.hubTreePage(page, repo: repo, commit: commit, endpoint: "https://hub"))
        #expect(files.map(\.path) == ["data/small.csv", "data/big.csv"])
        #expect(files[0].checksums == [try Checksum.parse("git-sha1:" + String(repeating: "b", count: 40)).get()])
        #expect(files[0].size == 12)
        #expect(files[1].checksums == [try Checksum.parse("sha256:" + String(repeating: "d", count: 64)).get()])
        #expect(files[1].size == 5_000_000)  // the content's, not the pointer's
        // Not an array of entries, or a malformed digest: not a listing.
        #expect(RepositoryAPI.hubTreePage(Data(#"{"error": "x"}"#.utf8), repo: repo, commit: commit, endpoint: "e") == nil)
        #expect(RepositoryAPI.hubTreePage(Data(#"[{"type": "file", "path": "a", "size": 1, "oid": "zz"}]"#.utf8),
                                          repo: repo, commit: commit, endpoint: "e") == nil)
        #expect(RepositoryAPI.hubCommit(Data(#"{"sha": "\#(commit)"}"#.utf8)) == commit)
        #expect(RepositoryAPI.hubCommit(Data(#"{"sha": "main"}"#.utf8)) == nil)
    }

    @Test func linkHeadersGiveTheNextPage() {
        let base = URL(string: "https://hub/api/x/tree/y?recursive=true")!
        #expect(RepositoryAPI.nextLink(#"<https://hub/api/x/tree/y?cursor=abc>; rel="next""#, base: base)?.absoluteString
            == "https://hub/api/x/tree/y?cursor=abc")
        #expect(RepositoryAPI.nextLink(#"<https://hub/p1>; rel="prev", </api/x?cursor=2>; rel=next"#, base: base)?.absoluteString
            == "https://hub/api/x?cursor=2")
        #expect(RepositoryAPI.nextLink(#"<https://hub/p1>; rel="prev""#, base: base) == nil)
        #expect(RepositoryAPI.nextLink(nil, base: base) == nil)
    }

    @Test func zenodoRecordsAndFigshareArticles() throws {
        let record = Data("""
            {"id": 42, "doi": "10.5281/zenodo.42", "revision": 3, "files": [
              {"id": "f", "key": "a.csv", "size": 8, "checksum": "md5:0CC175B9C0F1B6A831C399E269772661",
               "links": {"self": "https://z/api/records/42/files/a.csv/content"}}]}
            """.utf8)
        let listing = try #require(RepositoryAPI.zenodoRecord(record, record: "42"))
        #expect(listing.revision == "42@3")
        #expect(listing.files == [ListedFile(path: "a.csv", url: "https://z/api/records/42/files/a.csv/content", size: 8,
                                             checksums: [try Checksum.parse("md5:0cc175b9c0f1b6a831c399e269772661").get()])])
        #expect(RepositoryAPI.zenodoRecord(Data(#"{"status": 404, "message": "gone"}"#.utf8), record: "42") == nil)
        let article = Data("""
            {"id": 7, "version": 2, "files": [{"id": 1, "name": "f.dat", "size": 3, "computed_md5": "\(String(repeating: "e", count: 32))",
              "download_url": "https://ndownloader.figshare.com/files/1"}]}
            """.utf8)
        let figshare = try #require(RepositoryAPI.figshareArticle(article, article: "7"))
        #expect(figshare.revision == "7@2" && figshare.files.first?.url == "https://ndownloader.figshare.com/files/1")
    }

    @Test func aDOILandingIsMatchedByHostPortAndPath() {
        let endpoints = RepositoryAPI.Endpoints(RepositoryEndpoints(), environment: [:])
        #expect(RepositoryAPI.repository(ofLanding: "https://zenodo.org/records/123", endpoints: endpoints) == .zenodo(record: "123", path: nil))
        #expect(RepositoryAPI.repository(ofLanding: "https://zenodo.org/record/123", endpoints: endpoints) == .zenodo(record: "123", path: nil))
        #expect(RepositoryAPI.repository(ofLanding: "https://zenodo.org:8443/records/123", endpoints: endpoints) == nil)
        #expect(RepositoryAPI.repository(ofLanding: "https://evil.example/records/123", endpoints: endpoints) == nil)
        #expect(RepositoryAPI.repository(ofLanding: "https://figshare.com/articles/dataset/Title/777/2", endpoints: endpoints)
            == .figshare(article: "777", path: nil))
        #expect(RepositoryAPI.repository(ofLanding: "https://springernature.figshare.com/articles/Title/888", endpoints: endpoints)
            == .figshare(article: "888", path: nil))
        #expect(RepositoryAPI.repository(ofLanding: "https://notfigshare.com/articles/x/888", endpoints: endpoints) == nil)
        let local = RepositoryAPI.Endpoints(RepositoryEndpoints(), environment: ["ZENODO_ENDPOINT": "http://127.0.0.1:9000/"])
        #expect(local.zenodo == "http://127.0.0.1:9000")
        #expect(RepositoryAPI.repository(ofLanding: "http://127.0.0.1:9000/records/5", endpoints: local) == .zenodo(record: "5", path: nil))
        #expect(RepositoryAPI.doiLanding(Data(#"{"values": [{"type": "HS_ADMIN", "data": {}}, {"type": "URL", "data": {"value": "https://x/y"}}]}"#.utf8))
            == "https://x/y")
    }

    @Test func anExternalResolversOutputIsCheckedWhole() throws {
        let good = Data(#"{"version": 1, "revision": "r1", "files": [{"url": "https://h/a", "path": "a", "size": 3, "checksums": {"sha256": "\#(String(repeating: "f", count: 64))"}}]}"#.utf8)
        let listing = try RepositoryAPI.resolverOutput(good).get()
        #expect(listing.revision == "r1" && listing.files.first?.checksums.first?.algorithm == .sha256)
        let bad: [(String, String)] = [
            ("not json", "not the resolver JSON"),
            (#"{"version": 2, "files": []}"#, "version 2"),
            (#"{"version": 1, "files": [{"url": "file:///etc/passwd", "path": "p"}]}"#, "not an http(s) URL"),
            (#"{"version": 1, "files": [{"url": "https://h/a", "path": "p", "size": -1}]}"#, "negative size"),
            (#"{"version": 1, "files": [{"url": "https://h/a", "path": "p", "checksums": {"sha256": "xyz"}}]}"#, "is not a checksum"),
        ]
        for (text, reason) in bad {
            guard case .failure(let problem) = RepositoryAPI.resolverOutput(Data(text.utf8)) else {
                Issue.record("accepted: \(text)")
                continue
            }
            #expect(problem.message.contains(reason), "\(problem.message)")
        }
    }
}

/// Which command may list, read the lock, or neither: the one table (Docs/Sources.md).
@Suite struct PreparationTableTests {
    @Test func theTable() {
        #expect(Preparation.policy(.run) == (.list, .none))
        #expect(Preparation.policy(.pin) == (.list, .none))
        #expect(Preparation.policy(.plan) == (.list, .none))
        #expect(Preparation.policy(.runLocked) == (.lock, .required))
        #expect(Preparation.policy(.planLocked) == (.lock, .required))
        #expect(Preparation.policy(.verify) == (.offline, .consulted))
        #expect(Preparation.policy(.dryRun) == (.offline, .consulted))
        #expect(Preparation.policy(.check) == (.listAndCompare, .compared))
    }

    /// Offline commands never list: without a lockfile each source says it needs `pin`.
    @Test func offlineWithoutALockNeverAsks() async {
        let job = Job(id: "src", urls: [TemplatedString(literal: "hf://acme/tiny")], dest: TemplatedString(literal: "d"),
                      source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        var listed = job
        listed.listing = ObjectListing(reference: .huggingFace(.init(kind: .models, id: "acme/tiny", revision: "main", path: nil)))
        let manifest = Manifest(path: "m.yaml", outputDirectory: "/tmp", jobs: [listed])
        for command in [Preparation.Command.verify, .dryRun, .runLocked] {
            let prepared = await Preparation.expand(manifest, for: command, lock: nil, transport: NoTransport(), environment: [:])
            #expect(prepared.expansion.failures["src"]?.message.contains("batchfetch pin") == true)
            #expect(prepared.manifest.jobs.map { $0.id } == ["src"])
        }
    }
}

/// A transport that must never be asked: a request through it is a test failure.
private struct NoTransport: HTTPTransport {
    func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask {
        Issue.record("a request was made: \(request.url)")
        fatalError("no request may be made here")
    }
}

/// The relative paths of listed files placed under their job's directory, or refused.
@Suite struct ListingPlacementTests {
    @Test func aPathThatLeavesItsDirectoryIsRefused() {
        let job = Job(id: "s", urls: [], dest: TemplatedString(literal: "data/set"),
                      source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        #expect(ListingExpansion.placementProblem("a/b.csv", in: job) == nil)
        for bad in ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "", "a/"] {
            #expect(ListingExpansion.placementProblem(bad, in: job) != nil, "\(bad)")
        }
    }
}

/// An HTML page where a file was asked for (Docs/Sources.md).
@Suite struct HTMLGuardTests {
    private func job(_ url: String, dest: String = "data.zip", checksum: String? = nil, acceptHTML: Bool = false) -> Job {
        var job = Job(id: "j", urls: [TemplatedString(literal: url)], dest: TemplatedString(literal: dest),
                      checksums: checksum.map { [try! Checksum.parse($0).get()] } ?? [],
                      source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        job.settings.acceptHTML = acceptHTML
        return job
    }

    @Test func whenItApplies() {
        #expect(HTMLGuard(job: job("https://h/data.zip")).applies)
        #expect(!HTMLGuard(job: job("https://h/data.zip", acceptHTML: true)).applies)
        #expect(!HTMLGuard(job: job("https://h/data.zip", checksum: "md5:" + String(repeating: "a", count: 32))).applies)
        #expect(!HTMLGuard(job: job("https://h/index.HTML")).applies)
        #expect(!HTMLGuard(job: job("https://h/page?x=1", dest: "page.htm")).applies)
    }

    @Test func aPageIsKnownByItsTypeOrItsFirstBytes() {
        let guardHTML = HTMLGuard(job: job("https://h/data.zip"))
        #expect(guardHTML.failure(contentType: "text/html; charset=utf-8", prefix: Data("PK\u{3}\u{4}".utf8), served: "u") != nil)
        let page = Data("\u{FEFF}\n  <!DOCTYPE HTML><html><head><title>\n Virus scan\n warning </title>".utf8)
        let failure = guardHTML.failure(contentType: "application/octet-stream", prefix: page, served: "https://h/data.zip")
        #expect(failure?.code == .unexpectedHTML)
        #expect(failure?.message.contains("'Virus scan warning'") == true)
        #expect(guardHTML.failure(contentType: nil, prefix: Data("<HTML>".utf8), served: "u") != nil)
        #expect(guardHTML.failure(contentType: "application/zip", prefix: Data("PK\u{3}\u{4}<html>".utf8), served: "u") == nil)
        #expect(guardHTML.failure(contentType: nil, prefix: Data("<htmlx".utf8), served: "u") != nil)  // starts as a page does
        #expect(HTMLGuard(job: job("https://h/data.zip", acceptHTML: true)).failure(contentType: "text/html", prefix: Data(), served: "u") == nil)
    }
}

/// A git blob id computed in the one digest pass equals git's own.
@Suite struct GitBlobDigestTests {
    @Test func theBlobIDIsGits() throws {
        let bytes = Data("hello, blob\n".utf8)
        var digester = Digester(also: DigestAlgorithms(also: [.gitSHA1], blobSize: Int64(bytes.count)))
        digester.update(bytes)
        // `printf 'hello, blob\n' | git hash-object --stdin`
        #expect(digester.finalize()["git-sha1"] == "77bb0bd1d38ca43ea194815a950bc0bb131fa7ad")
        let empty = Digester(also: DigestAlgorithms(also: [.gitSHA1], blobSize: 0)).finalize()["git-sha1"]
        #expect(empty == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")  // git's empty blob
    }
}

/// Where the repositories' tokens come from and where they may go (Docs/Sources.md, "Tokens").
@Suite struct SourceCredentialsTests {
    private func source(_ url: String, reference: SourceReference, headers: [Job.Header] = [], hf: String? = nil) -> Job {
        var job = Job(id: "s", urls: [TemplatedString(literal: url)], dest: TemplatedString(literal: "d"), headers: headers,
                      source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        job.listing = ObjectListing(reference: reference)
        job.settings.repositories.hf = hf
        return job
    }

    private let hub = SourceReference.huggingFace(.init(kind: .models, id: "a/b", revision: "main", path: nil))

    @Test func aTokenGoesOnlyToItsRepositorysOrigin() {
        let credentials = SourceCredentials(job: source("hf://a/b", reference: hub),
                                            environment: ["HF_TOKEN": "hf_x", "ZENODO_TOKEN": "z_y"])
        let header = credentials.header(for: "https://huggingface.co/a/b/resolve/c/f.bin")
        #expect(header?.value.resolved == "Bearer hf_x")
        #expect(header?.value.redacted == "Bearer ${HF_TOKEN}")  // a secret: printed as its name
        #expect(credentials.header(for: "https://zenodo.org/api/records/1")?.value.redacted == "Bearer ${ZENODO_TOKEN}")
        #expect(credentials.header(for: "https://cdn-lfs.huggingface.co/x") == nil)
        #expect(credentials.header(for: "http://huggingface.co/a/b/resolve/c/f.bin") == nil)  // another scheme, another origin
        #expect(credentials.header(for: "https://huggingface.co:8443/x") == nil)
        // An endpoint of the manifest's moves the token with it.
        let mirrored = SourceCredentials(job: source("hf://a/b", reference: hub, hf: "https://hub.internal"), environment: ["HF_TOKEN": "t"])
        #expect(mirrored.header(for: "https://hub.internal/api/models/a/b/revision/main") != nil)
        #expect(mirrored.header(for: "https://huggingface.co/api/models/a/b/revision/main") == nil)
        // A job's own Authorization wins; a bucket prefix gets none.
        let own = SourceCredentials(job: source("hf://a/b", reference: hub, headers: [Job.Header(name: "authorization", value: TemplatedString(literal: "x"))]),
                                    environment: ["HF_TOKEN": "t"])
        #expect(own.header(for: "https://huggingface.co/x") == nil)
    }

    @Test func theHubTokenIsFoundAsHuggingfaceHubFindsIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hf-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("from-path\n".utf8).write(to: directory.appendingPathComponent("token-file"))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent(".cache/huggingface"), withIntermediateDirectories: true)
        try Data(" from-home ".utf8).write(to: directory.appendingPathComponent(".cache/huggingface/token"))
        let home = directory.path
        #expect(SourceCredentials.hubToken(["HF_TOKEN": "env", "HOME": home]) == "env")
        #expect(SourceCredentials.hubToken(["HF_TOKEN_PATH": home + "/token-file", "HOME": home]) == "from-path")
        #expect(SourceCredentials.hubToken(["HOME": home]) == "from-home")
        #expect(SourceCredentials.hubToken(["HF_HOME": home + "/nowhere", "HOME": home]) == nil)
        #expect(SourceCredentials.hubToken([:]) == nil)
    }
}
