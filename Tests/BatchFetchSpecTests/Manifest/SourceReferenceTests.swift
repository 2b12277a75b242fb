import BatchFetchSpec
import Foundation
import Testing

/// Source URLs read from their text alone (Docs/Sources.md): what each names, which files its
/// path selects and under which relative path, and how a manifest's sources, resolvers and
/// repository settings are validated.
@Suite struct SourceReferenceTests {
    private func parse(_ url: String, resolvers: Set<String> = []) -> Result<SourceReference, SourceProblem> {
        SourceReference.parse(url, resolvers: resolvers)
    }

    @Test func hubURLsNameKindRepositoryRevisionAndPath() throws {
        #expect(try parse("hf://acme/tiny").get() == .huggingFace(.init(kind: .models, id: "acme/tiny", revision: "main", path: nil)))
        #expect(try parse("hf://datasets/acme/set@v1.0/data/*.parquet").get()
            == .huggingFace(.init(kind: .datasets, id: "acme/set", revision: "v1.0", path: "data/*.parquet")))
        #expect(try parse("hf://spaces/acme/demo@refs%2Fpr%2F3").get()
            == .huggingFace(.init(kind: .spaces, id: "acme/demo", revision: "refs/pr/3", path: nil)))
        // A directory may be written with its '/'.
        #expect(try parse("hf://acme/tiny/data/").get() == .huggingFace(.init(kind: .models, id: "acme/tiny", revision: "main", path: "data")))
        #expect(try parse("zenodo:1/sub/").get() == .zenodo(record: "1", path: "sub"))
        // An organisation that happens to be called "datasets" still has a repository after it.
        #expect(try parse("hf://datasets/tiny").get() == .huggingFace(.init(kind: .models, id: "datasets/tiny", revision: "main", path: nil)))
        for bad in ["hf://onlyname", "hf:acme/tiny", "hf://acme/tiny@", "hf://ac me/tiny", "hf://acme/tiny/../x", "hf://acme/tiny/dir//",
                    "hf://acme/tiny/a//b", "hf://acme/../tiny"] {
            guard case .failure = parse(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    @Test func recordsArticlesAndDOIs() throws {
        #expect(try parse("zenodo:1234567").get() == .zenodo(record: "1234567", path: nil))
        #expect(try parse("zenodo:1234567/*.csv").get() == .zenodo(record: "1234567", path: "*.csv"))
        #expect(try parse("figshare:777").get() == .figshare(article: "777", path: nil))
        // Zenodo's own DOIs need no lookup; any other DOI is looked up at run time.
        #expect(try parse("doi:10.5281/zenodo.42").get() == .zenodo(record: "42", path: nil))
        #expect(try parse("doi:10.5281/ZENODO.42").get() == .zenodo(record: "42", path: nil))
        #expect(try parse("doi:10.6084/m9.figshare.777").get() == .doi("10.6084/m9.figshare.777"))
        for bad in ["zenodo:", "zenodo:abc", "figshare:12x", "doi:11.1/x", "doi:10.1234", "doi:10.1234/", "doi:10.1/a b"] {
            guard case .failure = parse(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    @Test func externalResolversOnlyWhenNamed() throws {
        #expect(try parse("ia:some/item", resolvers: ["ia"]).get() == .external(resolver: "ia", url: "ia:some/item"))
        #expect(SourceReference.isSource("ia:x", resolvers: []) == false)
        #expect(SourceReference.isSource("HF://acme/tiny", resolvers: []))
        #expect(SourceReference.isSource("https://h/x", resolvers: []) == false)
    }

    @Test func aSelectionKeepsWhatItsPathNamesRelativeToItsDirectory() {
        let all = SourceReference.Selection(path: nil)
        #expect(all.relative("a/b.txt") == "a/b.txt")
        let glob = SourceReference.Selection(path: "data/train/*.parquet")
        #expect(glob.base == "data/train")
        #expect(glob.relative("data/train/0.parquet") == "0.parquet")
        #expect(glob.relative("data/train/sub/0.parquet") == nil)
        #expect(glob.relative("data/test/0.parquet") == nil)
        let deep = SourceReference.Selection(path: "data/**/*.csv")
        #expect(deep.relative("data/a/b/c.csv") == "a/b/c.csv")
        let directory = SourceReference.Selection(path: "data")
        #expect(directory.relative("data/x/y.bin") == "x/y.bin")
        #expect(directory.relative("database.bin") == nil)
        // A plain path that is a file keeps its own name.
        let file = SourceReference.Selection(path: "weights/model.safetensors")
        #expect(file.relative("weights/model.safetensors") == "model.safetensors")
    }

    private func problems(_ text: String) -> [String] {
        do {
            _ = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/srv")
            return []
        } catch .invalid(let diagnostics) {
            return diagnostics.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func aManifestWithSourcesResolversAndEndpointsLoads() throws {
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array("""
            version: 1
            resolvers:
              ia: {command: [tools/ia-resolve, --json], timeout: 2m}
            defaults:
              hf: {endpoint: "https://hub.internal/"}
              accept_html: true
            jobs:
              - {id: model, url: "hf://acme/tiny@v1", dest: models/tiny/, include: "*.json"}
              - {id: item, url: "ia:thing", dest: ia/}
              - {id: blob, url: "https://h.example/x", size: 5, checksum: "git-sha1:0123456789abcdef0123456789abcdef01234567"}
            """.utf8), displayPath: "m.yaml", baseDirectory: "/srv/batch")
        #expect(manifest.resolvers["ia"] == ExternalResolver(command: ["/srv/batch/tools/ia-resolve", "--json"], timeout: 120))
        #expect(manifest.jobs[0].listing?.reference == .huggingFace(.init(kind: .models, id: "acme/tiny", revision: "v1", path: nil)))
        #expect(manifest.jobs[0].dest.resolved == "models/tiny")
        #expect(manifest.jobs[0].settings.repositories.hf == "https://hub.internal")
        #expect(manifest.jobs[0].settings.acceptHTML)
        #expect(manifest.jobs[1].listing?.reference == .external(resolver: "ia", url: "ia:thing"))
        #expect(manifest.jobs[2].checksums.first?.algorithm == .gitSHA1)
    }

    @Test func badResolversEndpointsAndSourceKeysAreRefusedWhereTheyAre() {
        let found = problems("""
            version: 1
            resolvers:
              hf: {command: [x]}
              Bad_Name: {command: [x]}
              empty: {command: []}
              nocommand: {timeout: 1s}
            defaults:
              zenodo: {endpoint: "ftp://z.example"}
            jobs:
              - {id: a, url: "hf://acme/tiny", dest: a/, size: 3}
              - {id: b, url: "https://h.example/b", checksum: "git-sha1:0123456789abcdef0123456789abcdef01234567"}
              - {id: c, urls: ["zenodo:1", "zenodo:2"], dest: c/}
            """)
        #expect(found.contains { $0.hasPrefix("m.yaml:3:3:") && $0.contains("'hf' is a scheme batchfetch already knows") })
        #expect(found.contains { $0.hasPrefix("m.yaml:4:3:") && $0.contains("is not a URL scheme") })
        #expect(found.contains { $0.hasPrefix("m.yaml:5:") && $0.contains("'command' must name a program") })
        #expect(found.contains { $0.hasPrefix("m.yaml:6:3:") && $0.contains("missing 'command'") })
        #expect(found.contains { $0.hasPrefix("m.yaml:8:") && $0.contains("zenodo: 'endpoint'") })
        #expect(found.contains { $0.hasPrefix("m.yaml:10:") && $0.contains("'size' does not apply to a source") })
        #expect(found.contains { $0.hasPrefix("m.yaml:11:") && $0.contains("'git-sha1' checksum needs the job's 'size'") })
        #expect(found.contains { $0.hasPrefix("m.yaml:12:") && $0.contains("is listed from one URL") })
    }

    @Test func aGitBlobIDIsAChecksumOfItsOwn() throws {
        let parsed = try Checksum.parse("git-sha1:0123456789ABCDEF0123456789abcdef01234567").get()
        #expect(parsed.algorithm == .gitSHA1)
        #expect(parsed.description == "git-sha1:0123456789abcdef0123456789abcdef01234567")
        #expect(parsed != (try Checksum.parse("sha1:0123456789abcdef0123456789abcdef01234567").get()))
    }
}

/// A path that names a directory may be written with its '/'; one that names a file may not
/// (``DestPath``, the one rule for dests, `into` and listing directories).
@Suite struct DirectoryPathTests {
    private func load(_ jobs: String) throws -> Manifest {
        try ManifestLoader(environment: [:]).load(bytes: Array("version: 1\njobs:\n\(jobs)".utf8), displayPath: "m.yaml", baseDirectory: "/srv")
    }

    @Test func intoIsADirectoryWithOrWithoutItsSlash() throws {
        // The example of Docs/Archives.md, refused before as if `into` named a file.
        let slashed = try load("  - {id: v, url: 'https://h.example/val.tar.gz', extract: {into: val/}}\n")
        #expect(slashed.jobs[0].extract?.into.resolved == "val")
        let plain = try load("  - {id: v, url: 'https://h.example/val.tar.gz', extract: val}\n")
        #expect(plain.jobs[0].extract?.into.resolved == "val")
        let nested = try load("  - {id: v, url: 'https://h.example/val.tar.gz', extract: {into: 'data/./val//'}}\n")
        #expect(nested.jobs[0].extract?.into.resolved == "data/val")
    }

    @Test func aFileIsNotWrittenWithASlash() {
        #expect(DestPath.normalize("a/b/") == .failure(.directory))
        #expect(DestPath.normalize("a/b/", as: .directory) == .success("a/b"))
        #expect(DestPath.normalize("/", as: .directory) == .failure(.absolute))
        #expect(DestPath.normalize("../x/", as: .directory) == .failure(.escapes))
        #expect(DestPath.normalize("x\n/", as: .directory) == .failure(.invalidCharacter))
    }
}
