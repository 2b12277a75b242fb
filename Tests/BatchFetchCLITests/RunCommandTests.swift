import Foundation
import Testing
import TestOrigin

/// `batchfetch run` end to end: exit codes, stderr lines, and a report that validates against
/// schemas/report.schema.json with an independent validator.
@Suite struct RunCommandTests {
    private func validateReport(_ path: String) async throws -> (Int32, String) {
        try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/report.schema.json", path])
    }

    private func world() async throws -> (TestOrigin, TemporaryDirectory) {
        let origin = try await TestOrigin.start()
        origin.serve("/ok.txt", .text("fine\n"))
        var missing = OriginFile.text("")
        missing.fixedStatus = 404
        origin.serve("/missing.txt", missing)
        return (origin, try TemporaryDirectory())
    }

    /// A manifest of one job, `/ok.txt` of the origin, into `out`.
    private static func writeOneJob(to directory: TemporaryDirectory, origin: TestOrigin) throws {
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))", size: 5}
            """)
    }

    @Test func successfulRunExitsZeroAndWritesAValidReport() async throws {
        let (origin, directory) = try await world()
        try Self.writeOneJob(to: directory, origin: origin)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.hasPrefix("downloaded  ok -> ok.txt  5 B in "))
        #expect(output.stderr.contains("succeeded: 1 downloaded, 0 up to date, 0 failed, 0 skipped"))
        let report = directory.url.appendingPathComponent("out/batchfetch-report.json").path
        let (status, text) = try await validateReport(report)
        #expect(status == 0, "\(text)")
    }

    /// A state store that is not batchfetch's is set aside with a warning on stderr (also with
    /// `--progress none`) and in the events, and the run goes on and succeeds; the next run is
    /// quiet.
    @Test func aStoreThatIsNotOursIsSetAsideWithAWarning() async throws {
        let (origin, directory) = try await world()
        try Self.writeOneJob(to: directory, origin: origin)
        try directory.write("out/.batchfetch-state.sqlite", String(repeating: "not a database ", count: 500))
        let output = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none", "--events", "events.ndjson"], in: directory.url)
        let again = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.hasPrefix("warning: the state store "), "\(output.stderr)")
        #expect(output.stderr.contains("was set aside as .batchfetch-state.sqlite.unusable"))
        let events = try String(contentsOf: directory.url.appendingPathComponent("events.ndjson"), encoding: .utf8)
        #expect(events.split(separator: "\n").first?.contains(#""event":"warning""#) == true, "\(events)")
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/.batchfetch-state.sqlite.unusable").path))
        #expect(again.status == 0 && !again.stderr.contains("warning"), "\(again.stderr)")
    }

    /// A server that echoes the request URI (token and all) in its Location, a relative redirect
    /// against a URL with a password, a refused ftp target: stderr, the report, the events and
    /// the JUnit file show `${TOKEN}` and `${PW}`, never the values.
    @Test func secretsEchoedByAServerAreRedactedInEveryOutput() async throws {
        let (origin, directory) = try await world()
        var echo = OriginFile.text("")
        echo.redirectTo = "/gone{uri}"
        origin.serve("/echo", echo)
        var ftp = OriginFile.text("")
        ftp.redirectTo = "ftp://127.0.0.2/{uri}"
        origin.serve("/ftp", ftp)
        let base = "http://u:${PW}@127.0.0.1:\(origin.port)"
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            defaults: {retries: 0}
            jobs:
              - {id: echo, url: "\(base)/echo?token=${TOKEN}", dest: a.bin}
              - {id: ftp, url: "\(base)/ftp?token=${TOKEN}", dest: b.bin}
            """)
        let output = try await BinaryRunner.run(
            ["run", "m.yaml", "--events", "events.ndjson", "--junit", "junit.xml", "--progress", "line"], in: directory.url,
            environment: ["TOKEN": "tok-5ecret-77", "PW": "pw-hunter-42"])
        try await origin.shutdown()
        #expect(output.status == 1)
        #expect(origin.allRequests.contains { $0.uri.contains("tok-5ecret-77") })
        let files = ["events.ndjson", "junit.xml", "out/batchfetch-report.json"].map {
            (try? String(contentsOf: directory.url.appendingPathComponent($0), encoding: .utf8)) ?? ""
        }
        for (name, text) in zip(["stderr", "events", "junit", "report"], [output.stderr] + files) {
            #expect(!text.isEmpty, "\(name) is empty")
            #expect(!text.contains("tok-5ecret-77") && !text.contains("pw-hunter-42"), "\(name): \(text)")
            #expect(text.contains("${TOKEN}"), "\(name): \(text)")
        }
    }

    @Test func failedJobExitsOneAndTheReportSaysWhy() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
              - {id: gone, url: "\(origin.url("/missing.txt"))"}
              - {id: after, url: "\(origin.url("/ok.txt"))", dest: after.txt, depends_on: [gone]}
            """)
        let reportPath = directory.url.appendingPathComponent("reports/last.json").path
        let output = try await BinaryRunner.run(["run", "m.yaml", "--report", reportPath], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 1)
        #expect(output.stderr.contains("failed      gone  http_status: HTTP 404 from \(origin.url("/missing.txt"))"))
        #expect(output.stderr.contains("skipped     after  dependency 'gone' failed"))
        let (status, text) = try await validateReport(reportPath)
        #expect(status == 0, "\(text)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any]
        #expect(report?["status"] as? String == "failed")
    }

    /// `--report-jobs`: the report lists only the jobs asked for and still counts every one; it
    /// validates, says what it lists, and cannot be pinned from.
    @Test func theReportCanListOnlyTheChangedOrFailedJobs() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
              - {id: gone, url: "\(origin.url("/missing.txt"))", retries: 0}
              - {id: after, url: "\(origin.url("/ok.txt"))", dest: after.txt, depends_on: [gone]}
            """)
        func report(_ name: String) throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent(name))) as? [String: Any] ?? [:]
        }
        let first = try await BinaryRunner.run(["run", "m.yaml", "--report", "changed.json", "--report-jobs", "changed"], in: directory.url)
        let second = try await BinaryRunner.run(["run", "m.yaml", "--report", "failed.json", "--report-jobs", "failed",
                                           "--junit", "failed.xml"], in: directory.url)
        let third = try await BinaryRunner.run(["run", "m.yaml", "--report", "rerun.json", "--report-jobs", "changed"], in: directory.url)
        try await origin.shutdown()
        #expect(first.status == 1 && second.status == 1 && third.status == 1, "\(first.stderr)")
        for name in ["changed.json", "failed.json", "rerun.json"] {
            let (status, text) = try await validateReport(directory.url.appendingPathComponent(name).path)
            #expect(status == 0, "\(name): \(text)")
        }
        let ids = { (report: [String: Any]) in (report["jobs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } }
        let changed = try report("changed.json"), failed = try report("failed.json"), rerun = try report("rerun.json")
        #expect(changed["jobs_reported"] as? String == "changed" && ids(changed) == ["ok", "gone", "after"])
        #expect(failed["jobs_reported"] as? String == "failed" && ids(failed) == ["gone", "after"])
        // The rerun changed nothing but still could not fetch 'gone': 'ok' is up to date, unlisted, counted.
        #expect(ids(rerun) == ["gone", "after"])
        #expect((rerun["summary"] as? [String: Any])?["up_to_date"] as? Int == 1)
        #expect((rerun["summary"] as? [String: Any])?["jobs"] as? Int == 3)
        let junit = try String(contentsOf: directory.url.appendingPathComponent("failed.xml"), encoding: .utf8)
        #expect(junit.contains("tests=\"2\""), "\(junit.prefix(300))")
        let pin = try await BinaryRunner.run(["pin", "m.yaml", "--from-report", "rerun.json"], in: directory.url)
        #expect(pin.status == 2 && pin.stderr.contains("it lists only the changed jobs (--report-jobs changed)"), "\(pin.stderr)")
    }

    /// A symlink planted at the run lock is refused, not truncated through.
    @Test func aSymlinkAtTheRunLockIsRefused() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
            """)
        try directory.write("precious.txt", "keep me\n")
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("out"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: directory.url.appendingPathComponent("out/.batchfetch.lock").path,
            withDestinationPath: directory.url.appendingPathComponent("precious.txt").path)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 1)
        #expect(output.stderr.contains("cannot take the run lock: \(directory.url.path)/out/.batchfetch.lock is a symbolic link; "
            + "refusing to open it (unsafe_path)"), "\(output.stderr)")
        #expect(try String(contentsOf: directory.url.appendingPathComponent("precious.txt"), encoding: .utf8) == "keep me\n")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/ok.txt").path))
    }

    /// An output directory that cannot be made says why and where, in words, not a Foundation
    /// error dump.
    @Test func anOutputDirectoryThatCannotBeMadeIsNamed() async throws {
        let (origin, directory) = try await world()
        try directory.write("blocker", "a file where a directory should be\n")
        try directory.write("m.yaml", """
            version: 1
            output_dir: blocker/out
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 1)
        #expect(output.stderr.contains("blocker/out: Not a directory (io_error)"), "\(output.stderr)")
        #expect(!output.stderr.contains("NSCocoaErrorDomain"))
    }

    /// `--report` that cannot be written stops the run before any download (exit 2).
    @Test func anUnwritableReportPathStopsBeforeDownloading() async throws {
        let (origin, directory) = try await world()
        try directory.write("blocker", "a file\n")
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml", "--report", "blocker/report.json"], in: directory.url)
        let requests = origin.requests("/ok.txt").count
        try await origin.shutdown()
        #expect(output.status == 2)
        #expect(output.stderr.contains("--report blocker/report.json cannot be written"), "\(output.stderr)")
        #expect(requests == 0)
    }

    @Test func onlyRunsTheNamedJobsAndTheirDependencies() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: base, url: "\(origin.url("/ok.txt"))", dest: base.txt}
              - {id: top, url: "\(origin.url("/ok.txt"))", dest: top.txt, depends_on: [base]}
              - {id: other, url: "\(origin.url("/ok.txt"))", dest: other.txt}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml", "--only", "top"], in: directory.url)
        let unknown = try await BinaryRunner.run(["run", "m.yaml", "--only", "tpo"], in: directory.url)
        try await origin.shutdown()
        #expect(output.status == 0, "\(output.stderr)")
        let exists = { (name: String) in FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(name).path) }
        #expect(exists("base.txt") && exists("top.txt") && !exists("other.txt"))
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "batchfetch: error: --only: unknown job 'tpo' (did you mean 'top'?)\n")
    }

    @Test func dryRunTellsWhatWouldHappenWithoutNetwork() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            jobs:
              - {id: have, url: "\(origin.url("/ok.txt"))", dest: have.txt, size: 5}
              - {id: need, url: "\(origin.url("/ok.txt"))", dest: need.txt}
            """)
        try directory.write("have.txt", "fine\n")
        let output = try await BinaryRunner.run(["run", "m.yaml", "--dry-run"], in: directory.url)
        let requests = origin.allRequests.count
        try await origin.shutdown()
        #expect(output.status == 0)
        #expect(output.stdout == """
            up to date   have -> have.txt
            would fetch  need -> need.txt  from \(origin.url("/ok.txt"))
            dry run: 1 to fetch, 1 up to date; nothing was sent

            """)
        #expect(requests == 0)
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("need.txt").path))
    }

    /// The content cache from the command line: the manifest's `cache:`, `BATCHFETCH_CACHE` over
    /// it, `--cache` over both, `--no-cache` over all; a dry run says which jobs it would serve,
    /// and the report names each download's `source` (and validates).
    @Test func theCacheIsChosenByFlagEnvironmentOrManifestAndADryRunSaysWhatItServes() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            cache: manifest-cache
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))", checksum: "sha256:8ecc5f94c57b05d6c5e0ee316bee4875427e1845bbeef3ead59df29c72aab36e"}
            """)
        let out = directory.url.appendingPathComponent("out")
        func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (output: BinaryRunner.Output, requests: Int) {
            try? FileManager.default.removeItem(at: out)
            origin.resetCounters()
            let output = try await BinaryRunner.run(arguments, in: directory.url, environment: environment)
            return (output, origin.requests("/ok.txt").count)
        }
        let filled = try await run(["run", "m.yaml"])
        let (schemaStatus, schemaText) = try await validateReport(out.appendingPathComponent("batchfetch-report.json").path)
        let report = try String(contentsOf: out.appendingPathComponent("batchfetch-report.json"), encoding: .utf8)
        let dry = try await run(["run", "m.yaml", "--dry-run"])
        let fromManifestCache = try await run(["run", "m.yaml"])
        let environmentCache = try await run(["run", "m.yaml"], environment: ["BATCHFETCH_CACHE": "env-cache"])
        let flagCache = try await run(["run", "m.yaml", "--cache", "env-cache"], environment: ["BATCHFETCH_CACHE": "empty-cache"])
        let noCache = try await run(["run", "m.yaml", "--no-cache"])
        let both = try await run(["run", "m.yaml", "--no-cache", "--cache", "x"])
        try await origin.shutdown()
        #expect(filled.output.status == 0 && filled.requests == 1, "\(filled.output.stderr)")
        #expect(schemaStatus == 0, "\(schemaText)")
        #expect(dry.output.stdout.contains("from cache   ok -> ok.txt") && dry.output.stdout.contains("(1 from the cache)")
                && dry.requests == 0, "\(dry.output.stdout)")
        #expect(fromManifestCache.requests == 0 && fromManifestCache.output.stderr.contains("ok -> ok.txt  5 B from the cache"),
                "\(fromManifestCache.output.stderr)")
        #expect(environmentCache.requests == 1, "BATCHFETCH_CACHE names an empty cache")
        #expect(flagCache.requests == 0, "--cache names the cache BATCHFETCH_CACHE filled")
        #expect(noCache.requests == 1)
        #expect(both.output.status == 2)
        #expect(report.contains("\"source\" : \"network\""))
    }

    /// `pin` reads and fills the cache as `run` does; `plan` says which downloads the cache
    /// holds — by the lockfile's sha256 only with `--locked`, as `run --locked` looks them up —
    /// and a locked run of a fresh output directory makes no request.
    @Test func pinFillsTheCacheAndPlanSaysWhatItHolds() async throws {
        let (origin, directory) = try await world()
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            cache: c
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))"}
            """)
        let sha = "8ecc5f94c57b05d6c5e0ee316bee4875427e1845bbeef3ead59df29c72aab36e"
        let pin = try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url)
        let entered = FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("c/sha256/8e/\(sha)").path)
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("out"))
        let unlocked = try await BinaryRunner.run(["plan", "m.yaml"], in: directory.url)
        let locked = try await BinaryRunner.run(["plan", "m.yaml", "--locked"], in: directory.url)
        let json = try await BinaryRunner.run(["plan", "m.yaml", "--locked", "--format", "json"], in: directory.url)
        let noCache = try await BinaryRunner.run(["plan", "m.yaml", "--locked", "--no-cache"], in: directory.url)
        origin.resetCounters()
        let run = try await BinaryRunner.run(["run", "m.yaml", "--locked"], in: directory.url)
        let requests = origin.requests("/ok.txt").count
        try await origin.shutdown()
        #expect(pin.status == 0 && entered, "\(pin.stderr)")
        #expect(unlocked.stdout.contains("/c\n") && unlocked.stdout.contains("ok -> ok.txt  [missing]"), "\(unlocked.stdout)")
        #expect(locked.stdout.contains("ok -> ok.txt  [missing; in the cache]"), "\(locked.stdout)")
        #expect(json.stdout.contains("/c\",") && json.stdout.contains("\"in_cache\": true"), "\(json.stdout)")
        #expect(!noCache.stdout.contains("cache"), "\(noCache.stdout)")
        #expect(run.status == 0 && requests == 0 && run.stderr.contains("from the cache"), "\(run.stderr)")
    }

    /// `batchfetch cache`: ls, du, verify (exit 3 on a corrupt entry, `--fix` evicts it), gc by
    /// last use (which a run that publishes from the cache renews) and by size, rm.
    @Test func theCacheCommandListsVerifiesAndTrims() async throws {
        let (origin, directory) = try await world()
        let sha = "8ecc5f94c57b05d6c5e0ee316bee4875427e1845bbeef3ead59df29c72aab36e"
        try directory.write("m.yaml", """
            version: 1
            output_dir: out
            cache: c
            jobs:
              - {id: ok, url: "\(origin.url("/ok.txt"))", checksum: "sha256:\(sha)"}
            """)
        let out = directory.url.appendingPathComponent("out")
        let entry = directory.url.appendingPathComponent("c/sha256/8e/\(sha)").path
        func run(_ arguments: [String]) async throws -> BinaryRunner.Output {
            try await BinaryRunner.run(arguments, in: directory.url)
        }
        func fill() async throws {
            try? FileManager.default.removeItem(at: out)
            _ = try await run(["run", "m.yaml"])
        }
        /// Puts an entry's last use `days` ago.
        func age(days: Double) {
            var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2),
                         timespec(tv_sec: Int(Date().timeIntervalSince1970 - days * 86_400), tv_nsec: 0)]
            _ = utimensat(AT_FDCWD, entry + ".verified", &times, 0)
        }
        try await fill()
        let ls = try await run(["cache", "ls", "--cache", "c"])
        let du = try await run(["cache", "du", "--manifest", "m.yaml"])
        let sound = try await run(["cache", "verify", "--cache", "c"])
        age(days: 40)
        try await fill()  // published from the cache: its last use is now
        let recent = try await run(["cache", "gc", "--cache", "c", "--older-than", "30d"])
        age(days: 40)
        let old = try await run(["cache", "gc", "--cache", "c", "--older-than", "30d"])
        try await fill()
        let bySize = try await run(["cache", "gc", "--cache", "c", "--max-size", "4"])
        try await fill()
        chmod(entry, 0o644)
        try Data("FINE\n".utf8).write(to: URL(fileURLWithPath: entry))
        let corrupt = try await run(["cache", "verify", "--cache", "c"])
        let fixed = try await run(["cache", "verify", "--cache", "c", "--fix"])
        let afterFix = try await run(["cache", "ls", "--cache", "c"])
        try await fill()
        let removed = try await run(["cache", "rm", "--cache", "c", sha])
        let missing = try await run(["cache", "rm", "--cache", "c", sha])
        let unnamed = try await run(["cache", "ls"])
        try await origin.shutdown()
        #expect(ls.status == 0 && ls.stdout.hasPrefix("\(sha)  5  20"), "\(ls.stdout)")
        #expect(du.stdout == "5 bytes (5 B) in 1 entry\n", "\(du.stdout)\(du.stderr)")
        #expect(sound.status == 0 && sound.stdout == "verified 1 entry: 0 corrupt\n")
        #expect(recent.stdout.hasPrefix("gc: removed 0"), "\(recent.stdout)")
        #expect(old.stdout.hasPrefix("removed \(sha)"), "\(old.stdout)")
        #expect(bySize.stdout.hasPrefix("removed \(sha)"), "\(bySize.stdout)")
        #expect(corrupt.status == 3 && corrupt.stdout.hasPrefix("corrupt \(sha): its content's sha256 is "), "\(corrupt.stdout)")
        #expect(fixed.status == 3 && fixed.stdout.contains("; evicted") && afterFix.stdout.isEmpty)
        #expect(removed.status == 0 && missing.status == 1)
        #expect(unnamed.status == 2 && unnamed.stderr.contains("no cache"))
    }

    /// `--transport` picks the HTTP client for `run`, `check` and `pin`, over
    /// `BATCHFETCH_TRANSPORT`; a value naming neither client, from the flag or the variable, is a
    /// usage error (exit 2). Which client asked shows in the headers it adds of its own.
    @Test func transportFlagChoosesTheClientOverTheEnvironment() async throws {
        let (origin, directory) = try await world()
        try Self.writeOneJob(to: directory, origin: origin)
        for (command, flag, variable) in [(["run"], "nio", "urlsession"), (["run"], "urlsession", "nio"),
                                          (["check"], "nio", "urlsession"), (["pin"], "nio", "urlsession")] {
            origin.resetCounters()
            try? FileManager.default.removeItem(at: directory.url.appendingPathComponent("out"))
            let output = try await BinaryRunner.run(command + ["m.yaml", "--transport", flag], in: directory.url,
                                              environment: ["BATCHFETCH_TRANSPORT": variable])
            #expect(output.status == 0, "\(command) \(flag): \(output.stderr)")
            let headers = origin.requests("/ok.txt").first?.headers.map(\.0) ?? []
            // libcurl (URLSession) sends `Accept: */*` of its own; AsyncHTTPClient only what it is given.
            #expect(headers.contains("Accept") == (flag == "urlsession"), "\(command) --transport \(flag): \(headers)")
        }
        let bogusFlag = try await BinaryRunner.run(["run", "m.yaml", "--transport", "curl"], in: directory.url)
        let bogusVariable = try await BinaryRunner.run(["check", "m.yaml"], in: directory.url, environment: ["BATCHFETCH_TRANSPORT": "NIO"])
        let emptyVariable = try await BinaryRunner.run(["check", "m.yaml"], in: directory.url, environment: ["BATCHFETCH_TRANSPORT": ""])
        try await origin.shutdown()
        #expect(bogusFlag.status == 2 && bogusFlag.stderr.contains("--transport"), "\(bogusFlag.stderr)")
        #expect(bogusVariable.status == 2 && bogusVariable.stderr.contains("BATCHFETCH_TRANSPORT is 'NIO'"), "\(bogusVariable.stderr)")
        #expect(emptyVariable.status == 0, "an empty BATCHFETCH_TRANSPORT is no choice: \(emptyVariable.stderr)")
    }

    @Test func invalidManifestExitsTwoWithoutNetwork() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", "version: 1\njobs:\n  - {id: a, url: 'ftp://h.example/a'}\n")
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(output.status == 2)
        #expect(output.stderr.hasPrefix("m.yaml:3:18: error: job 'a': unsupported URL scheme 'ftp'"))
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("batchfetch-report.json").path))
    }
}
