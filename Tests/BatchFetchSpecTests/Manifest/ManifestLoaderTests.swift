import BatchFetchSpec
import Foundation
import Testing

@Suite struct ManifestLoaderTests {
    private func load(_ text: String, environment: [String: String] = [:], base: String = "/srv/batch") throws -> Manifest {
        try ManifestLoader(environment: environment).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: base)
    }

    private func problems(_ text: String, environment: [String: String] = [:]) -> [String] {
        do {
            _ = try ManifestLoader(environment: environment).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/srv")
            return []
        } catch .invalid(let diagnostics) {
            return diagnostics.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    /// A diagnostic shows a long value cut in its middle, with its location whole: a 1 MiB URL
    /// gave 1 MiB of stderr.
    @Test func aHugeValueIsCutInItsDiagnostic() {
        let url = "ftp://h.example/" + String(repeating: "x", count: 1 << 20)
        let found = problems("version: 1\njobs:\n  - {id: a, url: \"\(url)\"}\n")
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("m.yaml:3:18: error: job 'a': unsupported URL scheme 'ftp' in 'ftp://h.example/xxx") == true)
        #expect(found.first?.contains("characters]…") == true && found.first?.hasSuffix("(expected http, https, s3 or gs)") == true)
        #expect((found.first?.count ?? .max) < 600)
    }

    @Test func topLevelDefaultsWhenOmitted() throws {
        let manifest = try load("version: 1\njobs:\n  - id: a\n    url: https://h.example/a.bin\n")
        #expect(manifest.outputDirectory == "/srv/batch")
        #expect(manifest.concurrency == 4)
        #expect(manifest.perHost == 6)
        #expect(manifest.rateLimit == nil)
        let job = try #require(manifest.jobs.first)
        #expect(job.dest.resolved == "a.bin")
        #expect(job.method == .get)
        #expect(job.settings == JobSettings())
        #expect(job.settings.retries == 4 && job.settings.timeout == 30 && job.settings.segments == .auto)
    }

    @Test func perHostMakesRoomForSegmentsUnlessItIsGiven() throws {
        let jobs = "jobs:\n  - {id: a, url: 'https://h.example/a', segments: 8}\n  - {id: b, url: 'https://h.example/b'}\n"
        #expect(try load("version: 1\n" + jobs).perHost == 8)
        #expect(try load("version: 1\nper_host: 12\n" + jobs).perHost == 12)
        #expect(problems("version: 1\nper_host: 4\n" + jobs) == [
            "m.yaml:2:11: error: 'per_host: 4' is less than 'segments: 8' of job 'a' (line 4): its segments would wait for "
                + "each other; raise per_host to 8 or lower segments"])
        // auto adapts to per_host, and a rate limit means no segments at all.
        #expect(try load("version: 1\nper_host: 2\njobs:\n  - {id: a, url: 'https://h.example/a'}\n").perHost == 2)
        #expect(try load("version: 1\nper_host: 4\nrate_limit: 1MB/s\n" + jobs).perHost == 4)
    }

    @Test func jobsInheritDefaultsAndOverrideThem() throws {
        let text = """
            version: 1
            output_dir: ../data
            concurrency: 8
            per_host: 2
            rate_limit: 100MB/s
            defaults:
              retries: 2
              backoff: 500ms
              timeout: 1m
              deadline: 2h
              segments: 4
              refresh: if-changed
              headers: {User-Agent: "batchfetch/1", Accept: "*/*"}
            jobs:
              - id: a
                url: https://h.example/a.bin
              - id: b
                url: https://h.example/b.bin
                retries: 0
                segments: auto
                refresh: always
                allow_insecure_redirect: true
                headers: {user-agent: custom}
            """
        let manifest = try load(text)
        #expect(manifest.outputDirectory == "/srv/data")
        #expect(manifest.concurrency == 8 && manifest.perHost == 2 && manifest.rateLimit == 100_000_000)
        let a = manifest.jobs[0].settings, b = manifest.jobs[1].settings
        #expect(a.retries == 2 && a.backoff == 0.5 && a.timeout == 60 && a.deadline == 7200)
        #expect(a.segments == .count(4) && a.refresh == .ifChanged && !a.allowInsecureRedirect)
        #expect(b.retries == 0 && b.backoff == 0.5 && b.segments == .auto && b.refresh == .always && b.allowInsecureRedirect)
        #expect(manifest.jobs[0].headers.map(\.name) == ["User-Agent", "Accept"])
        #expect(manifest.jobs[1].headers.map { "\($0.name)=\($0.value.resolved)" } == ["Accept=*/*", "user-agent=custom"])
    }

    @Test func networkSettingsMergeKeyByKeyAndResolvePathsAgainstTheManifest() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bf-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("certs"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["ca.pem", "other-ca.pem", "client.pem", "client.key"] {
            try Data().write(to: directory.appendingPathComponent("certs/\(name)"))
        }
        let manifest = try load("""
            version: 1
            defaults:
              retry_after_max: 10m
              tls: {ca_file: certs/ca.pem}
            jobs:
              - id: a
                url: https://h.example/a.bin
              - id: b
                url: https://h.example/b.bin
                cross_origin_headers: [Authorization, X-Token]
                netrc: true
                tls: {client_cert: "${CERTS}/client.pem", client_key: certs/client.key}
              - id: c
                url: https://h.example/c.bin
                tls: {ca_file: certs/other-ca.pem}
            """, environment: ["CERTS": "certs"], base: directory.path)
        let certs = directory.appendingPathComponent("certs").standardizedFileURL.path
        let (a, b, c) = (manifest.jobs[0].settings, manifest.jobs[1].settings, manifest.jobs[2].settings)
        #expect(a.retryAfterMax == 600 && !a.netrc && a.crossOriginHeaders.isEmpty)
        #expect(a.tls == TLSSettings(caFile: certs + "/ca.pem"))
        #expect(b.netrc && b.crossOriginHeaders == ["authorization", "x-token"])
        #expect(b.tls == TLSSettings(caFile: certs + "/ca.pem", clientCertificate: certs + "/client.pem", clientKey: certs + "/client.key"))
        #expect(c.tls == TLSSettings(caFile: certs + "/other-ca.pem"))
    }

    @Test func outputDirExpandsVariablesLikeEveryTemplatedValue() throws {
        let text = "version: 1\noutput_dir: ${OUTDIR:-out}/data\njobs:\n  - {id: a, url: https://h.example/a.bin}\n"
        #expect(try load(text).outputDirectory == "/srv/batch/out/data")
        #expect(try load(text, environment: ["OUTDIR": "/mnt/cache"]).outputDirectory == "/mnt/cache/data")
    }

    @Test func environmentValuesAreKeptApartFromPrintableText() throws {
        let text = """
            version: 1
            jobs:
              - id: a
                urls: ["https://${HOST}/a.bin", "https://${BACKUP:-b.example}/a.bin"]
                dest: ${SUBDIR:-raw}/a.bin
                headers: {Authorization: "Bearer ${TOKEN}"}
            """
        let job = try #require(try load(text, environment: ["HOST": "secret.example", "TOKEN": "t0k3n"]).jobs.first)
        #expect(job.urls.map(\.resolved) == ["https://secret.example/a.bin", "https://b.example/a.bin"])
        #expect(job.urls.map(\.redacted) == ["https://${HOST}/a.bin", "https://b.example/a.bin"])
        #expect(job.dest.resolved == "raw/a.bin")
        #expect(job.headers.first?.value.redacted == "Bearer ${TOKEN}")
        #expect(job.headers.first?.value.resolved == "Bearer t0k3n")
    }

    @Test func secretValuesNeverAppearInMessages() {
        let text = "version: 1\njobs:\n  - id: a\n    url: ftp://${HOST}/a.bin\n"
        let messages = problems(text, environment: ["HOST": "very-secret-host"])
        #expect(messages == ["m.yaml:4:10: error: job 'a': unsupported URL scheme 'ftp' in 'ftp://${HOST}/a.bin' (expected http, https, s3 or gs)"])
    }

    @Test func checksumsAreNormalisedAndChecksumsFromImpliesADependency() throws {
        let text = """
            version: 1
            jobs:
              - id: sums
                url: https://h.example/SHA256SUMS
              - id: a
                url: https://h.example/a.bin
                checksums_from: sums
              - id: b
                url: https://h.example/b.bin
                checksum: [SHA1:A94A8FE5CCB19BA61C4C0873D391E987982FBBD3]
            """
        do {
            _ = try load(text)
            Issue.record("uppercase algorithm name accepted")
        } catch {}
        let manifest = try load(text.replacingOccurrences(of: "SHA1:", with: "sha1:"))
        #expect(manifest.jobs[1].dependencies == ["sums"])
        #expect(manifest.jobs[2].checksums.map(\.description) == ["sha1:a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"])
    }

    @Test func sizesAcceptUnits() throws {
        let manifest = try load("version: 1\njobs:\n  - {id: a, url: 'https://h.example/a', size: 1.5GiB}\n  - {id: b, url: 'https://h.example/b', size: 42}\n")
        #expect(manifest.jobs.map(\.size) == [1_610_612_736, 42])
    }

    @Test func destNormalisedAndDuplicatesCaughtAfterNormalising() {
        let text = """
            version: 1
            jobs:
              - {id: a, url: 'https://h.example/a', dest: 'raw/./x.bin'}
              - {id: b, url: 'https://h.example/b', dest: 'raw/sub/../x.bin'}
            """
        #expect(problems(text) == ["m.yaml:4:47: error: job 'b': dest 'raw/x.bin' is also written by job 'a' (line 3)"])
    }

    @Test func destThroughSymlinkedParentIsRefused() throws {
        let base = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        try FileManager.default.createDirectory(at: base.appendingPathComponent("real"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: base.appendingPathComponent("link").path, withDestinationPath: "/tmp")
        let text = """
            version: 1
            jobs:
              - {id: a, url: 'https://h.example/a', dest: real/a.bin}
              - {id: b, url: 'https://h.example/b', dest: link/b.bin}
            """
        do {
            _ = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: base.path)
            Issue.record("accepted a dest through a symlink")
        } catch .invalid(let diagnostics) {
            #expect(diagnostics.map(\.description) == [
                "m.yaml:4:47: error: job 'b': dest 'link/b.bin' goes through symbolic link 'link' in output_dir; refusing to write outside it"
            ])
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// Every example manifest (`k8s-*.yaml` are Kubernetes objects, run by ShardingEndToEndTests).
    @Test func everyExampleLoads() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Fixtures.examples.path)
            .filter { $0.hasSuffix(".yaml") && !$0.hasPrefix("k8s-") }
        #expect(names.count >= 4)
        for name in names {
            let path = Fixtures.examples.appendingPathComponent(name).path
            let manifest = try ManifestLoader(environment: [:]).load(path: path)
            #expect(!manifest.jobs.isEmpty, "\(name)")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasPrefix("# yaml-language-server: $schema=../schemas/manifest.schema.json\n"), "\(name)")
        }
    }
}
