import Crypto
import Foundation
import Testing
import TestOrigin

/// A manifest split over machines as users run it (README "Running on many machines"): shards in
/// parallel processes sharing one output_dir against nginx, `merge-reports`, pinning from the
/// reports, sharded `check`/`verify`, and the Kubernetes example's own commands run per index.
/// The real Slurm cluster is scripts/slurm-test.sh.
@Suite(.serialized, .enabled(if: NginxServer.binary != nil || NginxServer.required))
struct ShardingEndToEndTests {
    private static func data(_ count: Int, seed: UInt64) -> Data {
        Data(OriginContent.generated(size: Int64(count), seed: seed).allBytes)
    }

    private static func hex(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    private static func json(_ url: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
    }

    /// Runs `batchfetch arguments` once per shard, all at once, each in a directory of its own
    /// (for its stderr.log); returns each one's exit status and stderr.
    private static func runShards(_ count: Int, _ arguments: (Int) -> [String], in directory: URL,
                                  environment: (Int) -> [String: String] = { _ in [:] }) async throws -> [(status: Int32, stderr: String)] {
        let processes = try (0..<count).map { index in
            let place = directory.appendingPathComponent("task-\(index)")
            try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
            return (place, try BinaryRunner.start(arguments(index), in: place, environment: environment(index)))
        }
        var results: [(status: Int32, stderr: String)] = []
        for (place, process) in processes {
            await BinaryRunner.exit(of: process)
            let stderr = (try? String(contentsOf: place.appendingPathComponent("stderr.log"), encoding: .utf8)) ?? ""
            results.append((process.terminationStatus, stderr))
        }
        return results
    }

    @Test func shardsShareOneOutputDirectoryAndMergeIntoTheWholeManifest() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let directory = try TemporaryDirectory()
        var lines = ["version: 1", "output_dir: data", "defaults: {retries: 1, backoff: 10ms}", "jobs:"]
        var files: [String: Data] = [:]
        for index in 0..<16 {
            let data = Self.data(10_000 + 9_000 * index, seed: UInt64(100 + index))
            let name = "f\(index).bin"
            files[name] = data
            try nginx.write(name, data)
            let after = index % 4 == 3 ? ", depends_on: [f\(index - 1)]" : ""
            lines.append("  - {id: f\(index), url: '\(nginx.url("/\(name)"))', size: \(data.count), checksum: 'sha256:\(Self.hex(data))'\(after)}")
        }
        let manifest = try directory.write("m.yaml", lines.joined(separator: "\n") + "\n").path
        let data = directory.url.appendingPathComponent("data")

        let runs = try await Self.runShards(4, { _ in ["run", manifest, "--shard", "auto", "--progress", "line"] }, in: directory.url,
                                      environment: { ["BATCHFETCH_SHARD": "\($0)/4"] })
        for (index, run) in runs.enumerated() {
            #expect(run.status == 0, "shard \(index): \(run.stderr)")
            #expect(run.stderr.contains("batchfetch: shard \(index)/4 (from BATCHFETCH_SHARD=\(index)/4): "), "\(run.stderr)")
        }
        for (name, bytes) in files {
            #expect(try Data(contentsOf: data.appendingPathComponent(name)) == bytes, "\(name)")
        }
        let reports = (0..<4).map { data.appendingPathComponent("batchfetch-report.shard-\($0)-of-4.json").path }
        let merged = try await BinaryRunner.run(["merge-reports"] + reports + ["--report", "merged.json", "--junit", "junit.xml"],
                                          in: directory.url)
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(merged.stderr.contains("merged 4 shard reports of run: succeeded, 16 jobs: 16 downloaded"), "\(merged.stderr)")
        let mergedPath = directory.url.appendingPathComponent("merged.json").path
        let (valid, text) = try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/report.schema.json", mergedPath] + reports)
        #expect(valid == 0, "\(text)")
        let report = try Self.json(URL(fileURLWithPath: mergedPath))
        #expect((report["jobs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == (0..<16).map { "f\($0)" }.sorted())
        #expect((report["summary"] as? [String: Any])?["bytes_total"] as? Int == files.values.reduce(0) { $0 + $1.count })
        let junit = try String(contentsOf: directory.url.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("tests=\"16\""), "\(junit.prefix(300))")

        // Incomplete or foreign sets are refused, naming what is wrong.
        let missing = try await BinaryRunner.run(["merge-reports"] + reports.dropLast(), in: directory.url)
        #expect(missing.status == 2 && missing.stderr.contains("shard 3/4 is missing"), "\(missing.stderr)")
        let twice = try await BinaryRunner.run(["merge-reports", reports[0], reports[0], reports[1], reports[2]], in: directory.url)
        #expect(twice.status == 2 && twice.stderr.contains("shard 0/4 is given 2 times"), "\(twice.stderr)")
        var foreign = try Self.json(URL(fileURLWithPath: reports[3]))
        foreign["manifest"] = ["path": "other.yaml", "sha256": String(repeating: "0", count: 64)]
        try JSONSerialization.data(withJSONObject: foreign).write(to: directory.url.appendingPathComponent("foreign.json"))
        let other = try await BinaryRunner.run(["merge-reports"] + reports.dropLast() + ["foreign.json"], in: directory.url)
        #expect(other.status == 2 && other.stderr.contains("foreign.json (shard 3/4) is for another manifest"), "\(other.stderr)")

        // The team pins from the shards' reports without any machine holding the whole dataset…
        let pin = try await BinaryRunner.run(["pin", manifest, "--from-report"] + reports, in: directory.url)
        #expect(pin.status == 0 && pin.stderr.contains("pinned 16 jobs (16 mirrors)"), "\(pin.stderr)")
        let partial = try await BinaryRunner.run(["pin", manifest, "--from-report", reports[1]], in: directory.url)
        #expect(partial.status == 2 && partial.stderr.contains("it covers shard 1/4 only"), "\(partial.stderr)")
        // …and the nightly rerun of a shard, locked, finds its files up to date.
        let rerun = try await BinaryRunner.run(["run", manifest, "--shard", "2/4", "--locked", "--progress", "line"], in: directory.url)
        #expect(rerun.status == 0 && rerun.stderr.contains(" 0 downloaded, "), "\(rerun.stderr)")

        // check and verify split the same way, and their reports merge too.
        // Another mtime too: written within the second the first was, nginx's ETag and
        // Last-Modified would be the same and the drift would look like nothing.
        try nginx.write("f5.bin", Self.data(files["f5.bin"]!.count, seed: 999), modified: Date().addingTimeInterval(60))
        let checks = try await Self.runShards(2, { ["check", manifest, "--shard", "\($0)/2"] }, in: directory.url)
        let verifies = try await Self.runShards(2, { ["verify", manifest, "--shard", "\($0)/2"] }, in: directory.url)
        #expect(verifies.allSatisfy { $0.status == 0 }, "\(verifies)")
        #expect(checks.map(\.status).sorted() == [0, 3], "f5 drifted in one shard: \(checks)")
        let checkReports = (0..<2).map { data.appendingPathComponent("batchfetch-check.shard-\($0)-of-2.json").path }
        let mergedCheck = try await BinaryRunner.run(["merge-reports"] + checkReports, in: directory.url)
        #expect(mergedCheck.status == 3, "\(mergedCheck.stderr)")
        #expect(mergedCheck.stderr.contains("merged 2 shard reports of check: failed, 16 jobs: 15 ok, 1 drift"), "\(mergedCheck.stderr)")
        let verifyReports = (0..<2).map { data.appendingPathComponent("batchfetch-verify.shard-\($0)-of-2.json").path }
        #expect(try await BinaryRunner.run(["merge-reports"] + verifyReports, in: directory.url).status == 0)
    }

    /// Jobs from a csv list are jobs like any other: planned, split into shards, merged, pinned
    /// from the shards' reports, rerun locked and verified; a changed list makes the reports
    /// another manifest's.
    @Test func jobListsShardMergeAndPinLikeAnyJob() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let directory = try TemporaryDirectory()
        var rows = ["url,sha256,size,caption"]
        for index in 0..<12 {
            let data = Self.data(5_000 + 700 * index, seed: UInt64(300 + index))
            try nginx.write("set/n\(index % 3)/img-\(index).jpg", data)
            rows.append("\(nginx.url("/set/n\(index % 3)/img-\(index).jpg")),\(Self.hex(data)),\(data.count),\"a, \"\"quoted\"\" caption\"")
        }
        try nginx.write("labels.txt", Data("cat\ndog\n".utf8))
        try directory.write("lists/images.csv", rows.joined(separator: "\r\n") + "\r\n")
        let manifest = try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs_from:
              - {file: lists/images.csv, id_prefix: img}
            jobs:
              - {id: labels, url: '\(nginx.url("/labels.txt"))', depends_on: [img/set/n0/img-0.jpg]}
            """).path
        let plan = try await BinaryRunner.run(["plan", manifest, "--format", "json"], in: directory.url)
        let order = ((try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])?["order"] as? [[String: Any]])?
            .compactMap { $0["id"] as? String } ?? []
        #expect(order.count == 13 && order.contains("img/set/n2/img-11.jpg") && order.last == "labels", "\(plan.stdout.prefix(400))")

        let runs = try await Self.runShards(3, { ["run", manifest, "--shard", "\($0)/3", "--progress", "line"] }, in: directory.url)
        #expect(runs.allSatisfy { $0.status == 0 }, "\(runs)")
        let data = directory.url.appendingPathComponent("data")
        #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("set/n2/img-11.jpg").path))
        let reports = (0..<3).map { data.appendingPathComponent("batchfetch-report.shard-\($0)-of-3.json").path }
        let merged = try await BinaryRunner.run(["merge-reports"] + reports + ["--report", "merged.json"], in: directory.url)
        #expect(merged.status == 0 && merged.stderr.contains("13 jobs: 13 downloaded"), "\(merged.stderr)")
        let mergedPath = directory.url.appendingPathComponent("merged.json").path
        let (valid, text) = try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/report.schema.json", mergedPath])
        #expect(valid == 0, "\(text)")
        let lists = (try Self.json(URL(fileURLWithPath: mergedPath))["manifest"] as? [String: Any])?["lists"] as? [[String: Any]]
        #expect(lists?.first?["path"] as? String == "lists/images.csv" && (lists?.first?["sha256"] as? String)?.count == 64)

        let pin = try await BinaryRunner.run(["pin", manifest, "--from-report", mergedPath], in: directory.url)
        #expect(pin.status == 0 && pin.stderr.contains("pinned 13 jobs"), "\(pin.stderr)")
        let rerun = try await BinaryRunner.run(["run", manifest, "--locked", "--progress", "line"], in: directory.url)
        #expect(rerun.status == 0 && rerun.stderr.contains(" 0 downloaded, "), "\(rerun.stderr)")
        #expect(try await BinaryRunner.run(["verify", manifest], in: directory.url).status == 0)

        // Another row in the list: the reports are of other jobs now.
        try nginx.write("set/new.jpg", Self.data(100, seed: 1))
        try directory.write("lists/images.csv", rows.joined(separator: "\r\n") + "\r\n\(nginx.url("/set/new.jpg")),,,\r\n")
        let stale = try await BinaryRunner.run(["pin", manifest, "--from-report", mergedPath], in: directory.url)
        #expect(stale.status == 2 && stale.stderr.contains("it is for other job lists than the manifest's now: lists/images.csv (sha256 "),
                "\(stale.stderr)")
    }

    @Test func aShardRunKeepsTheWholeManifestsRunOutAndSaysWhoHoldsTheLock() async throws {
        let nginx = try await NginxServer(slowRate: "64k")
        defer { nginx.stop() }
        let directory = try TemporaryDirectory()
        try nginx.write("slow/big.bin", Self.data(4 << 20, seed: 5))
        try nginx.write("small.bin", Self.data(1000, seed: 6))
        let manifest = try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: big, url: '\(nginx.url("/slow/big.bin"))', size: \(4 << 20)}
              - {id: small, url: '\(nginx.url("/small.bin"))', size: 1000}
            """).path
        let plan = try await BinaryRunner.run(["plan", manifest, "--shards", "2", "--format", "json"], in: directory.url)
        let shards = (try JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])?["shards"] as? [[String: Any]]
        #expect(shards?.compactMap { $0["jobs"] as? Int } == [1, 1], "\(plan.stdout)")
        let bigShard = shards?.firstIndex { $0["bytes"] as? Int == 4 << 20 } ?? 0
        let slow = try BinaryRunner.start(["run", manifest, "--shard", "\(bigShard)/2", "--progress", "line"], in: directory.url)
        defer { slow.terminate() }
        let lockFile = directory.url.appendingPathComponent("data/.batchfetch.shard-\(bigShard)-of-2.lock").path
        let pid = "\(slow.processIdentifier)\n"
        let holding = await BinaryRunner.wait { (try? String(contentsOfFile: lockFile, encoding: .utf8)) == pid }
        #expect(holding, "the slow shard never took its lock")
        let whole = try await BinaryRunner.run(["run", manifest], in: directory.url)
        #expect(whole.status == 4 && whole.stderr.contains("the runs of shards (of a split manifest) holds"), "\(whole.stderr)")
        let same = try await BinaryRunner.run(["run", manifest, "--shard", "\(bigShard)/2"], in: directory.url)
        #expect(same.status == 4 && same.stderr.contains("(pid \(slow.processIdentifier)) holds \(lockFile)"), "\(same.stderr)")
        let other = try await BinaryRunner.run(["run", manifest, "--shard", "\(1 - bigShard)/2"], in: directory.url)
        #expect(other.status == 0 && other.stderr.contains("1 downloaded"), "the other shard runs beside it: \(other.stderr)")
    }

    /// The Kubernetes example's fetch command, run once per completion index with
    /// JOB_COMPLETION_INDEX set as Kubernetes sets it, then its merge command; the volumes are
    /// directories here (/config and /data mapped to temporary ones).
    @Test func theKubernetesExampleFetchesEveryFileOnePodPerIndex() async throws {
        let example = BinaryRunner.repository.appendingPathComponent("examples/k8s-indexed-job.yaml").path
        let parsed = try await ToolRun.run(["python3", "-c", """
            import json, sys, yaml
            docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(open(sys.argv[1]))}
            fetch, merge = docs["datasets-fetch"], docs["datasets-merge"]
            container = fetch["spec"]["template"]["spec"]["containers"][0]
            print(json.dumps({
              "manifest": docs["datasets-manifest"]["data"]["datasets.yaml"],
              "mode": fetch["spec"]["completionMode"], "completions": fetch["spec"]["completions"],
              "fetch": container["command"], "env": {e["name"]: e["value"] for e in container["env"]},
              "merge": merge["spec"]["template"]["spec"]["containers"][0]["command"]}))
            """, example])
        let spec = try JSONSerialization.jsonObject(with: parsed.stdout) as? [String: Any] ?? [:]
        #expect(spec["mode"] as? String == "Indexed")
        let completions = spec["completions"] as? Int ?? 0
        #expect(completions == 4)

        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let directory = try TemporaryDirectory()
        let config = directory.url.appendingPathComponent("config").path
        let volume = directory.url.appendingPathComponent("data").path
        /// The mounts: paths that begin with /config/ or /data/ (and output_dir /data) move here.
        func mapped(_ text: String) -> String {
            text.replacingOccurrences(of: "output_dir: /data\n", with: "output_dir: \(volume)\n")
                .replacingOccurrences(of: "(^|[ \"])/config/", with: "$1\(config)/", options: .regularExpression)
                .replacingOccurrences(of: "(^|[ \"])/data/", with: "$1\(volume)/", options: .regularExpression)
        }
        var files: [String: Data] = [:]
        for (index, name) in ["train-0.bin", "train-1.bin", "valid.bin"].enumerated() { files[name] = Self.data(50_000 + index, seed: UInt64(index)) }
        for index in 0..<4 { files["images-\(index).tar"] = Self.data(300_000, seed: UInt64(10 + index)) }
        files["labels.csv"] = Data("id,label\n1,cat\n".utf8)
        for (name, data) in files { try nginx.write(name, data) }
        let sums = ["train-0.bin", "train-1.bin", "valid.bin"].map { "\(Self.hex(files[$0]!))  \($0)\n" }.joined()
        try nginx.write("SHA256SUMS", Data(sums.utf8))
        try directory.write("config/datasets.yaml", mapped(spec["manifest"] as? String ?? ""))

        var environment = spec["env"] as? [String: String] ?? [:]
        environment["DATASETS_MIRROR"] = nginx.url("")
        let command = (spec["fetch"] as? [String] ?? []).map(mapped)
        #expect(command.first == "batchfetch")
        let pods = try await Self.runShards(completions, { _ in Array(command.dropFirst()) }, in: directory.url,
                                      environment: { environment.merging(["JOB_COMPLETION_INDEX": "\($0)"]) { _, new in new } })
        for (index, pod) in pods.enumerated() {
            #expect(pod.status == 0, "pod \(index): \(pod.stderr)")
            #expect(pod.stderr.contains("shard \(index)/4 (from Kubernetes JOB_COMPLETION_INDEX=\(index), 4 shards)"), "\(pod.stderr)")
        }
        for (name, data) in files {
            #expect(try Data(contentsOf: URL(fileURLWithPath: volume).appendingPathComponent(name)) == data, "\(name)")
        }
        let merge = (spec["merge"] as? [String] ?? []).map(mapped)
        var mergeEnvironment = BinaryRunner.baseEnvironment
        mergeEnvironment["PATH"] = BinaryRunner.binary.deletingLastPathComponent().path + ":/usr/bin:/bin"
        let shell = try await ToolRun.run(URL(fileURLWithPath: "/bin/sh"), Array(merge.dropFirst()), environment: mergeEnvironment)
        #expect(merge.first == "sh" && shell.status == 0)
        let report = try Self.json(URL(fileURLWithPath: volume).appendingPathComponent("batchfetch-report.json"))
        #expect(report["status"] as? String == "succeeded" && (report["jobs"] as? [Any])?.count == 9, "\(report)")
    }
}
