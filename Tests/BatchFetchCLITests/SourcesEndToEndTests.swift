import Foundation
import Testing

/// Sources end to end (Docs/Sources.md): `run`, `pin`, `run --locked`, `verify` and `check` of
/// `hf://`, `zenodo:`, `figshare:` and `doi:` jobs against the fake repositories of
/// Tests/Support/fake_repos.py, and external resolvers that work, print garbage, fail or hang.
/// Nothing here needs the internet.
///
/// The fakes answer as the APIs are documented (the fake's docstring has the details):
/// - Hub: `HfApi.repo_info`/`list_repo_tree` in huggingface_hub's reference
///   (https://huggingface.co/docs/huggingface_hub/package_reference/hf_api) — `revision/{rev}`
///   gives `sha`; `tree/{sha}?recursive=true` pages with `Link: <…>; rel="next"` (the client's
///   `utils/_pagination.paginate`); entries `{type, oid, size, path, lfs?}`; `resolve/` redirects
///   LFS files to a CDN on another host.
/// - Zenodo: https://developers.zenodo.org/#records — `files[].{key, size, checksum: "md5:…",
///   links.self}`, 429 with `Retry-After` when rate-limited.
/// - figshare: https://docs.figshare.com/#public_article — `files[].{name, size, computed_md5,
///   download_url}`, `version`.
/// - DOI: the handle proxy's REST API (https://www.doi.org/the-identifier/resources/factsheets/doi-resolution-documentation)
///   — `values[]` with `type: "URL"` and `data.value` the landing page.
@Suite(.serialized) struct SourcesEndToEndTests {
    static let main = String(repeating: "1", count: 40)
    static let tag = String(repeating: "2", count: 40)

    /// The Hub model `acme/tiny` (four files over two pages of two), a Zenodo record, a figshare
    /// article reached by its DOI, and a DOI that lands nowhere batchfetch reads.
    static func fixture(hubFiles: String? = nil, faults: String = "{}") -> String {
        """
        {"page_size": 2, "faults": \(faults),
         "hf": {"models/acme/tiny": {"revisions": {"main": "\(main)", "v1.0": "\(tag)"},
           "commits": {"\(main)": \(hubFiles ?? """
               [{"path": "config.json", "content": "{\\"a\\": 1}\\n"},
                {"path": "weights/model.safetensors", "content": "WEIGHTS", "repeat": 1000, "lfs": true},
                {"path": "weights/extra.bin", "content": "EXTRA", "lfs": true},
                {"path": "README.md", "content": "# tiny\\n"}]
               """),
             "\(tag)": [{"path": "config.json", "content": "{\\"a\\": 0}\\n"}]}}},
         "zenodo": {"1234567": {"revision": 4, "files": [{"key": "table.csv", "content": "a,b\\n1,2\\n"},
                                                          {"key": "notes.txt", "content": "hello\\n"}]}},
         "figshare": {"777": {"version": 2, "files": [{"name": "fig.dat", "content": "figdata"}]}},
         "doi": {"10.6084/m9.figshare.777": "http://127.0.0.1:{port}/articles/dataset/Title/777/2",
                 "10.1000/elsewhere": "https://example.org/landing/9"}}
        """
    }

    /// A fake repository serving `fixture`, the directory of the test, and the environment that
    /// points every endpoint at the fake with a Hub token.
    private func start(_ fixture: String) async throws -> (PythonService, TemporaryDirectory, [String: String]) {
        let directory = try TemporaryDirectory()
        let file = try directory.write("fixture.json", fixture)
        let fake = try await PythonService("fake_repos.py", ["{port}", file.path])
        let endpoint = fake.url("")
        let environment = ["HF_ENDPOINT": endpoint, "ZENODO_ENDPOINT": endpoint, "FIGSHARE_ENDPOINT": endpoint,
                           "DOI_ENDPOINT": endpoint, "HF_TOKEN": "hf_secret_token_value"]
        return (fake, directory, environment)
    }

    /// What the fake was asked: path, Host and Authorization of every request.
    private func requests(_ fake: PythonService) throws -> [(path: String, host: String, authorization: String?)] {
        let data = try Data(contentsOf: URL(string: fake.url("/_log"))!)
        let entries = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        return entries.map { ($0["path"] as? String ?? "", $0["host"] as? String ?? "", $0["authorization"] as? String) }
            .filter { $0.path != "/_log" }
    }

    private func report(_ directory: TemporaryDirectory, _ name: String = "batchfetch-report.json") throws -> [String: [String: Any]] {
        let data = try Data(contentsOf: directory.url.appendingPathComponent("out/\(name)"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        var jobs: [String: [String: Any]] = [:]
        for job in object?["jobs"] as? [[String: Any]] ?? [] { jobs[job["id"] as? String ?? ""] = job }
        return jobs
    }

    private func errorCode(_ job: [String: Any]?) -> String? {
        (job?["error"] as? [String: Any])?["code"] as? String
    }

    private func errorMessage(_ job: [String: Any]?) -> String {
        (job?["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    @Test func aHubModelIsFetchedAtItsCommitVerifiedAndItsTokenStaysWithTheHub() async throws {
        let (fake, directory, environment) = try await start(Self.fixture())
        defer { fake.stop() }
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - id: tiny
                url: hf://acme/tiny
                dest: tiny/
              - id: after
                url: \(fake.url("/acme/tiny/resolve/\(Self.main)/README.md"))
                dest: after.md
                depends_on: [tiny]
            """)
        // A dry run is offline: without a lockfile it says the source is to be listed, and asks nothing.
        let dry = try await BinaryRunner.run(["run", "m.yaml", "--dry-run"], in: directory.url, environment: environment)
        #expect(dry.status == 0 && dry.stdout.contains("would list   tiny -> tiny/  from hf://acme/tiny"), "\(dry.stdout)")
        #expect(try requests(fake).isEmpty)
        let run = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let weights = try Data(contentsOf: directory.url.appendingPathComponent("out/tiny/weights/model.safetensors"))
        #expect(weights == Data(String(repeating: "WEIGHTS", count: 1000).utf8))
        #expect(try String(contentsOf: directory.url.appendingPathComponent("out/tiny/config.json"), encoding: .utf8) == "{\"a\": 1}\n")
        let jobs = try report(directory)
        #expect(Set(jobs.keys) == ["tiny/config.json", "tiny/README.md", "tiny/weights/model.safetensors", "tiny/weights/extra.bin", "after"])
        // The non-LFS file is held to its git blob id, the LFS one to its sha256.
        let configSums = jobs["tiny/config.json"]?["checksums"] as? [String: String]
        #expect(configSums?["git-sha1"] != nil)
        #expect(jobs["tiny/config.json"]?["checksum_verified"] as? Bool == true)
        #expect(jobs["tiny/weights/model.safetensors"]?["checksum_verified"] as? Bool == true)
        // Three pages of tree (4 files and a directory, two a page), each with the token; the CDN
        // (another origin: localhost) never sees it; nothing printed or reported holds it.
        let asked = try requests(fake)
        #expect(asked.filter { $0.path.contains("/tree/") }.count == 3)
        let cdn = asked.filter { $0.path.hasPrefix("/cdn/") }
        #expect(cdn.count == 2 && cdn.allSatisfy { $0.host.hasPrefix("localhost") && $0.authorization == nil })
        #expect(asked.filter { $0.path.hasPrefix("/api/") }.allSatisfy { $0.authorization == "Bearer hf_secret_token_value" })
        let reportText = try String(contentsOf: directory.url.appendingPathComponent("out/batchfetch-report.json"), encoding: .utf8)
        #expect(!reportText.contains("hf_secret_token_value") && !run.stderr.contains("hf_secret_token_value"))

        // pin writes the commit; a locked rerun, verify and plan --locked list nothing.
        let pin = try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url, environment: environment)
        #expect(pin.status == 0, "\(pin.stderr)")
        let lock = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("m.lock.json"))) as? [String: Any]
        let sources = lock?["sources"] as? [String: [String: String]]
        #expect(sources?["tiny"] == ["source": "hf://acme/tiny", "revision": Self.main])
        // What the Hub published is pinned too: the blob id of a file outside LFS.
        let entries = lock?["jobs"] as? [String: [String: Any]]
        #expect((entries?["tiny/config.json"]?["checksums"] as? [String: String])?["git-sha1"] == configSums?["git-sha1"])
        let listed = try requests(fake).filter { $0.path.hasPrefix("/api/") }.count
        for arguments in [["run", "m.yaml", "--locked"], ["verify", "m.yaml"], ["plan", "m.yaml", "--locked"]] {
            let output = try await BinaryRunner.run(arguments, in: directory.url, environment: environment)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
        }
        #expect(try requests(fake).filter { $0.path.hasPrefix("/api/") }.count == listed)
        #expect(try report(directory, "batchfetch-verify.json").count == 5)
    }

    @Test func zenodoAndFigshareByDOIAndADOIThatLandsElsewhere() async throws {
        // Zenodo answers 429 (Retry-After: 0) once: the listing is retried, as a download would be.
        let (fake, directory, environment) = try await start(Self.fixture(faults: #"{"zenodo_429": 1}"#))
        defer { fake.stop() }
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: rec, url: "doi:10.5281/zenodo.1234567", dest: rec/, include: "*.csv"}
              - {id: fig, url: "doi:10.6084/m9.figshare.777", dest: fig/}
              - {id: nowhere, url: "doi:10.1000/elsewhere", dest: n/}
              - {id: gone, url: "zenodo:999", dest: gone/}
              - {id: norev, url: "hf://acme/tiny@no-such-tag", dest: norev/}
              - {id: norepo, url: "hf://acme/nothing", dest: norepo/}
              - {id: later, url: "\(fake.url("/cdn/none"))", depends_on: [nowhere]}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(run.status == 1)
        let jobs = try report(directory)
        #expect(jobs["rec/table.csv"]?["status"] as? String == "downloaded")
        #expect(jobs["rec/notes.txt"] == nil)  // not included
        #expect((jobs["rec/table.csv"]?["checksums"] as? [String: String])?["md5"] != nil)
        #expect(jobs["fig/fig.dat"]?["status"] as? String == "downloaded")
        #expect(errorCode(jobs["nowhere"]) == "unsupported_doi")
        #expect(errorMessage(jobs["nowhere"]).contains("https://example.org/landing/9"))
        #expect(jobs["later"]?["status"] as? String == "skipped")
        for id in ["gone", "norev", "norepo"] { #expect(errorCode(jobs[id]) == "resolver_failed", "\(id)") }
        #expect(errorMessage(jobs["norev"]).contains("no-such-tag"))
        #expect(try requests(fake).filter { $0.path == "/api/records/1234567" }.count == 2)
    }

    @Test func hostileListingsFailOnlyTheirOwnFiles() async throws {
        // A tree with a path that climbs out, and a file whose served bytes are not its blob.
        let files = """
            [{"path": "good.txt", "content": "good\\n"},
             {"path": "../escape.txt", "content": "evil\\n"},
             {"path": "tampered.txt", "content": "listed\\n", "served": "other!\\n"}]
            """
        let (fake, directory, environment) = try await start(Self.fixture(hubFiles: files))
        defer { fake.stop() }
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            defaults: {retries: 0}
            jobs:
              - {id: tiny, url: "hf://acme/tiny", dest: tiny/}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(run.status == 1)
        let jobs = try report(directory)
        #expect(jobs["tiny/good.txt"]?["status"] as? String == "downloaded")
        // Bytes that are not the listed blob are never published.
        #expect(errorCode(jobs["tiny/tampered.txt"]) == "checksum_mismatch")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/tiny/tampered.txt").path))
        #expect(errorCode(jobs["tiny/../escape.txt"]) == "unsafe_path")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/escape.txt").path))
    }

    @Test func checkReportsAddedRemovedAndChangedFilesWhenTheBranchMoves() async throws {
        var (fake, directory, environment) = try await start(Self.fixture())
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: tiny, url: "hf://acme/tiny", dest: tiny/}
            """)
        #expect(try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url, environment: environment).status == 0)
        fake.stop()
        // main moved: config.json changed (to content of the same size: its blob id tells),
        // README.md removed, NEW.md added; the weights are the same bytes (not drift, though the
        // fake's port, and so every URL, changed).
        let moved = """
            [{"path": "config.json", "content": "{\\"a\\": 2}\\n"},
             {"path": "weights/model.safetensors", "content": "WEIGHTS", "repeat": 1000, "lfs": true},
             {"path": "weights/extra.bin", "content": "EXTRA", "lfs": true},
             {"path": "NEW.md", "content": "new\\n"}]
            """
        let file = try directory.write("fixture.json", Self.fixture(hubFiles: moved))
        fake = try await PythonService("fake_repos.py", ["{port}", file.path])
        defer { fake.stop() }
        for key in ["HF_ENDPOINT", "ZENODO_ENDPOINT", "FIGSHARE_ENDPOINT", "DOI_ENDPOINT"] { environment[key] = fake.url("") }
        // The lock pinned URLs on the old port: the moved fake answers the listing.
        let check = try await BinaryRunner.run(["check", "m.yaml"], in: directory.url, environment: environment)
        #expect(check.status == 3, "\(check.stderr)")
        let jobs = try report(directory, "batchfetch-check.json")
        #expect(jobs["tiny/NEW.md"]?["status"] as? String == "drift")
        #expect(jobs["tiny/README.md"]?["status"] as? String == "missing")
        #expect(jobs["tiny/config.json"]?["status"] as? String == "drift")
        #expect(errorMessage(jobs["tiny/config.json"]).hasPrefix("changed: listed with git-sha1:"))
        #expect(!errorMessage(jobs["tiny/weights/model.safetensors"]).hasPrefix("changed"))
    }

    @Test func externalResolversThatWorkPrintGarbageFailOrHang() async throws {
        let (fake, directory, environment) = try await start(Self.fixture())
        defer { fake.stop() }
        let good = """
            {"version": 1, "revision": "r7", "files": [
              {"url": "\(fake.url("/api/records/1234567/files/table.csv/content"))", "path": "t/table.csv", "size": 8},
              {"url": "\(fake.url("/api/records/1234567/files/notes.txt/content"))", "path": "../../etc/passwd"}]}
            """
        try directory.write("tools/good.sh", "#!/bin/sh\ncat <<'END'\n\(good)\nEND\n")
        try directory.write("tools/garbage.sh", "#!/bin/sh\necho 'this is not json'\n")
        try directory.write("tools/fails.sh", "#!/bin/sh\necho 'token expired for' \"$1\" >&2\nexit 3\n")
        try directory.write("tools/hangs.sh", "#!/bin/sh\nsleep 300 &\nsleep 300\n")
        for name in ["good", "garbage", "fails", "hangs"] {
            chmod(directory.url.appendingPathComponent("tools/\(name).sh").path, 0o755)
        }
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            resolvers:
              co: {command: [tools/good.sh, --json]}
              junk: {command: [tools/garbage.sh]}
              broken: {command: [tools/fails.sh]}
              stuck: {command: [tools/hangs.sh], timeout: 1s}
            jobs:
              - {id: ok, url: "co:dataset/42", dest: ok/}
              - {id: junk, url: "junk:x", dest: junk/}
              - {id: broken, url: "broken:x", dest: broken/}
              - {id: stuck, url: "stuck:x", dest: stuck/}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(run.status == 1)
        let jobs = try report(directory)
        #expect(jobs["ok/t/table.csv"]?["status"] as? String == "downloaded")
        #expect(errorCode(jobs["ok/../../etc/passwd"]) == "unsafe_path")
        for id in ["junk", "broken", "stuck"] { #expect(errorCode(jobs[id]) == "resolver_failed", "\(id)") }
        let message = { (id: String) in self.errorMessage(jobs[id]) }
        #expect(message("broken").contains("exited 3: token expired for broken:x"))
        #expect(message("junk").contains("not the resolver JSON"))
        #expect(message("stuck").contains("did not finish within 1 s"))
    }

    @Test func anHTMLPageIsNotADatasetUnlessAccepted() async throws {
        let (fake, directory, environment) = try await start(Self.fixture())
        defer { fake.stop() }
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: page, urls: ["\(fake.url("/quota/data.zip"))", "\(fake.url("/cdn/none"))"], dest: data.zip}
              - {id: wanted, url: "\(fake.url("/quota/data.zip"))", dest: kept.zip, accept_html: true}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(run.status == 1)
        let jobs = try report(directory)
        #expect(jobs["wanted"]?["status"] as? String == "downloaded")
        #expect(jobs["page"]?["status"] as? String == "failed")
        let attempts = (jobs["page"]?["error"] as? [String: Any])?["attempts"] as? [[String: Any]] ?? []
        let first = attempts.first
        #expect(first?["code"] as? String == "unexpected_html")
        #expect((first?["message"] as? String)?.contains("Quota exceeded") == true)
        #expect(attempts.count == 2)  // then the next mirror
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/data.zip").path))
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/data.zip.part").path))
    }

    @Test func malformedSourcesAreValidationErrorsWithTheirPlace() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: a, url: "hf://onlyname", dest: a/}
              - {id: b, url: "doi:11.123/x", dest: b/}
              - {id: c, url: "zenodo:abc", dest: c/}
              - {id: d, url: "ia:thing", dest: d/}
              - {id: e, url: "hf://acme/tiny"}
              - {id: f, url: "hf://acme/tiny", dest: f/}
              - {id: g, url: "https://h.example/g", dest: f/inside.bin}
            """)
        let output = try await BinaryRunner.run(["validate", "m.yaml"], in: directory.url)
        #expect(output.status == 2)
        #expect(output.stderr.contains("m.yaml:3:18"))
        #expect(output.stderr.contains("names no repository"))
        #expect(output.stderr.contains("m.yaml:4:18") && output.stderr.contains("is not a DOI"))
        #expect(output.stderr.contains("m.yaml:5:18") && output.stderr.contains("is its number"))
        #expect(output.stderr.contains("m.yaml:6:18") && output.stderr.contains("unsupported URL scheme 'ia'"))
        #expect(output.stderr.contains("m.yaml:7:18") && output.stderr.contains("needs 'dest: DIR/'"))
        // A job cannot write where a source puts its files (their names are known only later).
        #expect(output.stderr.contains("dest 'f/inside.bin' lies inside 'f', where job 'f' puts the files it lists"))
        // A malformed source is still a listing: its `dest: DIR/` is no second error (only the
        // URL that names no source at all makes its dest a file's).
        #expect(output.stderr.components(separatedBy: "dest names a file").count == 2)
    }
}
