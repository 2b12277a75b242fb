import Crypto
import Foundation
import Testing

/// `s3://` downloads against moto's S3 server with its signature checks on (every request after
/// the three that make the IAM user must be signed by that user's key): objects are fetched
/// signed — one in segments, one whose key needs encoding —, a rerun is up to date, a wrong
/// secret or an unsigned request is refused (so the checks are real), credentials come from a
/// profile as the AWS CLI finds them, and no secret reaches the output or the report. The
/// transport is the suite's (`make test` runs both).
@Suite struct ObjectStoreTests {
    struct Bucket {
        let moto: PythonService
        let id: String
        let secret: String
        let objects: [String: Data]
    }

    /// A signed moto with `objects` stored in the bucket `data` (by boto3, not by us).
    static func bucket(_ objects: [String: Data], in directory: TemporaryDirectory) async throws -> Bucket {
        // The user's three requests are the ones moto lets through unsigned: one that fails on a
        // loaded machine cannot be retried against the same server (a fourth request must be
        // signed), so a failed setup starts a fresh server.
        var attempt = 0
        var (moto, user) = (try await PythonService("s3_helper.py", ["serve-signed", "{port}"]), (status: Int32(0), output: ""))
        while true {
            user = try await PythonService.run("s3_helper.py", ["user", moto.url("")])
            attempt += 1
            guard user.status != 0, attempt < 3 else { break }
            moto.stop()
            moto = try await PythonService("s3_helper.py", ["serve-signed", "{port}"])
        }
        if user.status != 0 { moto.stop() }
        try #require(user.status == 0, "s3_helper.py user: \(user.output)")
        let keys = try JSONSerialization.jsonObject(with: Data(user.output.utf8)) as? [String: String] ?? [:]
        let (id, secret) = (keys["id"] ?? "", keys["secret"] ?? "")
        try await store(objects, at: moto.url(""), id: id, secret: secret, in: directory)
        return Bucket(moto: moto, id: id, secret: secret, objects: objects)
    }

    /// Stores `objects` in the bucket `data` at `endpoint`, by boto3 (not by us).
    static func store(_ objects: [String: Data], at endpoint: String, id: String, secret: String, in directory: TemporaryDirectory) async throws {
        for (key, data) in objects {
            let file = directory.url.appendingPathComponent("upload-\(UUID().uuidString)")
            try data.write(to: file)
            let put = try await PythonService.run("s3_helper.py", ["put", endpoint, id, secret, "data", key, file.path])
            try #require(put.status == 0, "put \(key)")
            try FileManager.default.removeItem(at: file)
        }
    }

    static func random(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: count)
        data.withUnsafeMutableBytes { bytes in
            for offset in stride(from: 0, to: count, by: 8) {
                withUnsafeBytes(of: generator.next() as UInt64) { word in
                    bytes[offset..<min(count, offset + 8)].copyBytes(from: word.prefix(count - offset))
                }
            }
        }
        return data
    }

    static func report(_ directory: TemporaryDirectory) throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("out/batchfetch-report.json"))) as? [String: Any]
        let jobs = object?["jobs"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: jobs.map { ($0["id"] as? String ?? "", $0) })
    }

    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func signedDownloadsFromABucket() async throws {
        let directory = try TemporaryDirectory()
        let bucket = try await Self.bucket(["dir/big.bin": Self.random(12 << 20), "dir/a b.bin": Self.random(70_000)], in: directory)
        defer { bucket.moto.stop() }
        func manifest(_ s3: String) async throws {
            _ = try directory.write("m.yaml", """
                version: 1
                output_dir: out
                defaults:
                  s3: \(s3)
                jobs:
                  - {id: big, url: "s3://data/dir/big.bin", dest: big.bin, size: \(12 << 20), segments: 3}
                  - {id: spaced, url: "s3://data/dir/a%20b.bin", dest: spaced.bin}
                """)
        }
        try await manifest("{endpoint: \"\(bucket.moto.url(""))\"}")
        let environment = ["AWS_ACCESS_KEY_ID": bucket.id, "AWS_SECRET_ACCESS_KEY": bucket.secret, "HOME": directory.url.path]
        let first = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("out/big.bin")) == bucket.objects["dir/big.bin"])
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("out/spaced.bin")) == bucket.objects["dir/a b.bin"])
        let jobs = try Self.report(directory)
        #expect(jobs["big"]?["url"] as? String == "s3://data/dir/big.bin")
        #expect(jobs["big"]?["segments"] as? Int ?? 0 > 1, "\(jobs["big"] ?? [:])")
        let report = try String(contentsOf: directory.url.appendingPathComponent("out/batchfetch-report.json"), encoding: .utf8)
        #expect(!report.contains(bucket.secret) && !first.stdout.contains(bucket.secret) && !first.stderr.contains(bucket.secret))

        let again = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(again.status == 0 && (again.stdout + again.stderr).contains("0 downloaded, 2 up to date"), "\(again.stdout)\(again.stderr)")

        // moto refuses a wrong secret and an unsigned request: the checks above were real.
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("out"))
        var wrong = environment
        wrong["AWS_SECRET_ACCESS_KEY"] = "not" + bucket.secret
        let refused = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: wrong)
        #expect(refused.status == 1 && refused.stderr.contains("HTTP 403"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/big.bin").path))
        try await manifest("{endpoint: \"\(bucket.moto.url(""))\", anonymous: true}")
        let unsigned = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(unsigned.status == 1 && unsigned.stderr.contains("HTTP 403"), "\(unsigned.stderr)")
    }

    /// An upload to `s3://` is one signed PUT (below 64 MiB); the object is what boto3 reads
    /// back, and a rerun is up to date without sending it again.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func anUploadToABucketIsOneSignedPut() async throws {
        let directory = try TemporaryDirectory()
        let (moto, proxy) = try await Self.proxiedBucket(["seed.bin": Data("x".utf8)], in: directory)
        defer { proxy.stop(); moto.stop() }
        let data = Self.random(300_000)
        let environment = try Self.uploading(data, to: "s3://data/runs/2026/result+é%20x.bin", through: proxy, in: directory)
        let first = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        let stored = try await PythonService.run("s3_helper.py", ["object", proxy.url(""), "data", "runs/2026/result+é x.bin",
                                                            Self.proxyKey, Self.proxySecret])
        let object = try JSONSerialization.jsonObject(with: Data(stored.output.utf8)) as? [String: Any]
        #expect(object?["size"] as? Int == data.count)
        #expect(object?["sha256"] as? String == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
        let again = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(again.status == 0 && (again.stdout + again.stderr).contains("1 up to date"), "\(again.stdout)\(again.stderr)")
    }

    /// Credentials and region from a named profile in the AWS CLI's files (the manifest's
    /// `profile` wins over keys in the environment, as `--profile` does), endpoint from
    /// `AWS_ENDPOINT_URL`.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func credentialsFromAProfile() async throws {
        let directory = try TemporaryDirectory()
        let bucket = try await Self.bucket(["k.bin": Self.random(10_000)], in: directory)
        defer { bucket.moto.stop() }
        _ = try directory.write("aws/credentials", """
            [default]
            aws_access_key_id = AKIAWRONGDEFAULT
            aws_secret_access_key = wrong

            [team]
            aws_access_key_id = \(bucket.id)
            aws_secret_access_key = \(bucket.secret)
            """)
        _ = try directory.write("aws/config", "[profile team]\nregion = us-east-1\n")
        _ = try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: k, url: "s3://data/k.bin", dest: k.bin, s3: {profile: team}}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: [
            "AWS_SHARED_CREDENTIALS_FILE": directory.url.appendingPathComponent("aws/credentials").path,
            "AWS_CONFIG_FILE": directory.url.appendingPathComponent("aws/config").path,
            "AWS_ACCESS_KEY_ID": "AKIAWRONGENV", "AWS_SECRET_ACCESS_KEY": "wrong",
            "AWS_ENDPOINT_URL": bucket.moto.url(""), "HOME": directory.url.path,
        ])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("out/k.bin")) == bucket.objects["k.bin"])
    }

    /// moto without its own checks behind the tests' verifying proxy (`sigv4_proxy.py`, which
    /// recomputes every signature with botocore and accepts boto3's): the objects are stored
    /// through it by boto3.
    static func proxiedBucket(_ objects: [String: Data], in directory: TemporaryDirectory) async throws -> (moto: PythonService, proxy: PythonService) {
        let moto = try await PythonService("s3_helper.py", ["serve", "{port}"])
        let proxy = try await PythonService("sigv4_proxy.py", ["{port}", moto.url(""), proxyKey, proxySecret])
        try await store(objects, at: proxy.url(""), id: proxyKey, secret: proxySecret, in: directory)
        return (moto, proxy)
    }

    /// `out/upload.bin` holding `data`, and `m.yaml` uploading it to `url` through `proxy`; the
    /// environment with the proxy's keys.
    static func uploading(_ data: Data, to url: String, through proxy: PythonService, in directory: TemporaryDirectory) throws -> [String: String] {
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("out"), withIntermediateDirectories: true)
        try data.write(to: directory.url.appendingPathComponent("out/upload.bin"))
        _ = try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: up, upload: upload.bin, url: "\(url)", s3: {endpoint: "\(proxy.url(""))"}}
            """)
        return ["AWS_ACCESS_KEY_ID": proxyKey, "AWS_SECRET_ACCESS_KEY": proxySecret, "HOME": directory.url.path]
    }

    static let proxyKey = "AKIAPROXYTEST"
    static let proxySecret = "proxy+secret/with=odd"

    /// A prefix becomes one job per object: ids `JOBID/relative`, dests under `DIR/`, `exclude`
    /// applied, a folder marker (a key ending in `/`) not an object, keys with spaces, `+` and
    /// non-ASCII characters; a job that depended on the prefix waits for every object; a rerun
    /// lists again and is up to date; a listing refused (wrong secret) fails the prefix job and
    /// skips its dependents.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func aPrefixBecomesOneJobPerObject() async throws {
        let directory = try TemporaryDirectory()
        let objects = ["ds/a.bin": Self.random(50_000), "ds/sub/b.bin": Self.random(20_000), "ds/sub/notes.txt": Data("skip".utf8),
                       "ds/é q+.bin": Self.random(1000), "ds/empty/": Data(), "other/x.bin": Self.random(3000)]
        let (moto, proxy) = try await Self.proxiedBucket(objects, in: directory)
        defer { proxy.stop(); moto.stop() }
        _ = try directory.write("m.yaml", """
            version: 1
            output_dir: out
            defaults:
              s3: {endpoint: "\(proxy.url(""))"}
            jobs:
              - {id: ds, url: "s3://data/ds/", dest: tree/, exclude: ["**/*.txt"]}
              - {id: after, url: "s3://data/other/x.bin", dest: x.bin, depends_on: [ds]}
            """)
        let environment = ["AWS_ACCESS_KEY_ID": Self.proxyKey, "AWS_SECRET_ACCESS_KEY": Self.proxySecret, "HOME": directory.url.path]
        let first = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        for (key, relative) in [("ds/a.bin", "a.bin"), ("ds/sub/b.bin", "sub/b.bin"), ("ds/é q+.bin", "é q+.bin")] {
            #expect(try Data(contentsOf: directory.url.appendingPathComponent("out/tree/\(relative)")) == objects[key], "\(key)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/tree/sub/notes.txt").path))
        let jobs = try Self.report(directory)
        #expect(Set(jobs.keys) == ["ds/a.bin", "ds/sub/b.bin", "ds/é q+.bin", "after"], "\(jobs.keys)")
        #expect(jobs["ds/a.bin"]?["url"] as? String == "s3://data/ds/a.bin" && jobs["ds/a.bin"]?["dest"] as? String == "tree/a.bin")
        #expect(jobs["after"]?["status"] as? String == "downloaded")

        let again = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(again.status == 0 && (again.stdout + again.stderr).contains("0 downloaded, 4 up to date"), "\(again.stdout)\(again.stderr)")

        // pin records the listing; an object added since is in a new plan and run, not in the
        // locked ones.
        let pin = try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url, environment: environment)
        #expect(pin.status == 0, "\(pin.stderr)")
        let lock = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("m.lock.json"))) as? [String: Any]
        let pinned = lock?["jobs"] as? [String: [String: Any]] ?? [:]
        #expect(Set(pinned.keys) == ["ds/a.bin", "ds/sub/b.bin", "ds/é q+.bin", "after"], "\(pinned.keys)")
        #expect(pinned["ds/a.bin"]?["size"] as? Int == 50_000 && (pinned["ds/a.bin"]?["sha256"] as? String)?.count == 64)
        // verify sees the prefix's objects, from the lock, offline: one changed behind its back is drift.
        try Self.random(50_000).write(to: directory.url.appendingPathComponent("out/tree/a.bin"))
        let verify = try await BinaryRunner.run(["verify", "m.yaml"], in: directory.url, environment: ["HOME": directory.url.path])
        #expect(verify.status == 3 && verify.stderr.contains("ds/a.bin -> tree/a.bin") && verify.stderr.contains("3 ok, 1 mismatched"),
                "\(verify.stderr)")
        try objects["ds/a.bin"]!.write(to: directory.url.appendingPathComponent("out/tree/a.bin"))
        let added = directory.url.appendingPathComponent("added.bin")
        try Self.random(777).write(to: added)
        #expect(try await PythonService.run("s3_helper.py", ["put", proxy.url(""), Self.proxyKey, Self.proxySecret, "data", "ds/new.bin", added.path]).status == 0)
        let plan = try await BinaryRunner.run(["plan", "m.yaml"], in: directory.url, environment: environment)
        let lockedPlan = try await BinaryRunner.run(["plan", "m.yaml", "--locked"], in: directory.url, environment: environment)
        #expect(plan.stdout.contains("ds/new.bin -> tree/new.bin") && !lockedPlan.stdout.contains("new.bin"), "\(plan.stdout)\(lockedPlan.stdout)")
        let locked = try await BinaryRunner.run(["run", "m.yaml", "--locked"], in: directory.url, environment: environment)
        #expect(locked.status == 0 && (locked.stdout + locked.stderr).contains("0 downloaded, 4 up to date"), "\(locked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/tree/new.bin").path))
        let unlocked = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: environment)
        #expect(unlocked.status == 0 && (unlocked.stdout + unlocked.stderr).contains("1 downloaded, 4 up to date"), "\(unlocked.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("out/tree/new.bin")) == Data(contentsOf: added))

        // check against the lock: an object added since is drift ("added"), one removed missing.
        #expect(try await PythonService.run("s3_helper.py", ["delete", proxy.url(""), Self.proxyKey, Self.proxySecret, "data", "ds/sub/b.bin"]).status == 0)
        let check = try await BinaryRunner.run(["check", "m.yaml", "--report", "check.json"], in: directory.url, environment: environment)
        #expect(check.status == 3, "\(check.stderr)")
        let checked = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("check.json"))) as? [String: Any]
        let verdicts = Dictionary(uniqueKeysWithValues: (checked?["jobs"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0) })
        #expect(verdicts["ds/a.bin"]?["status"] as? String == "ok" && verdicts["ds/sub/b.bin"]?["status"] as? String == "missing")
        #expect(verdicts["ds/new.bin"]?["status"] as? String == "drift"
                && ((verdicts["ds/new.bin"]?["error"] as? [String: Any])?["message"] as? String)?.hasPrefix("added:") == true, "\(verdicts["ds/new.bin"] ?? [:])")

        var wrong = environment
        wrong["AWS_SECRET_ACCESS_KEY"] = "wrong"
        let refused = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: wrong)
        #expect(refused.status == 1 && refused.stderr.contains("listing s3://data/ds/: HTTP 403"), "\(refused.stderr)")
        let failed = try Self.report(directory)
        #expect(failed["ds"]?["status"] as? String == "failed" && failed["after"]?["status"] as? String == "skipped")
    }

    /// A prefix of more objects than one listing page (moto's pages hold 1,000 keys): every page
    /// is read, through its continuation token.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func aListingOfManyPages() async throws {
        let directory = try TemporaryDirectory()
        let (moto, proxy) = try await Self.proxiedBucket([:], in: directory)
        defer { proxy.stop(); moto.stop() }
        let put = try await PythonService.run("s3_helper.py", ["put-many", proxy.url(""), Self.proxyKey, Self.proxySecret, "data", "many/", "1005"])
        try #require(put.status == 0, "\(put.output)")
        _ = try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: many, url: "s3://data/many/", dest: many/, s3: {endpoint: "\(proxy.url(""))"}}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: [
            "AWS_ACCESS_KEY_ID": Self.proxyKey, "AWS_SECRET_ACCESS_KEY": Self.proxySecret, "HOME": directory.url.path])
        #expect(output.status == 0, "\(output.stderr.suffix(2000))")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.url.appendingPathComponent("out/many").path)
        #expect(files.count == 1005)
        #expect(try String(contentsOf: directory.url.appendingPathComponent("out/many/01004.txt"), encoding: .utf8) == "object 1004\n")
    }

    /// A `kill -9` in the middle of a 200 MB object (the proxy holds the body at 100 MB until the
    /// test has killed the client) leaves a part that the next run resumes with a signed
    /// `Range` + `If-Range` request: the file is whole and the report says where it resumed.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func aKilledObjectDownloadResumes() async throws {
        let directory = try TemporaryDirectory()
        let gate = directory.url.appendingPathComponent("release").path
        let moto = try await PythonService("s3_helper.py", ["serve", "{port}"])
        let proxy = try await PythonService("sigv4_proxy.py", ["{port}", moto.url(""), Self.proxyKey, Self.proxySecret, "\(100 << 20)", gate])
        defer { proxy.stop(); moto.stop() }
        let stored = try await PythonService.run("s3_helper.py", ["put-random", moto.url(""), "any", "any", "data", "big/object.bin", "\(200 << 20)"])
        try #require(stored.status == 0)
        _ = try directory.write("m.yaml", """
            version: 1
            output_dir: out
            jobs:
              - {id: big, url: "s3://data/big/object.bin", dest: object.bin, segments: 1, s3: {endpoint: "\(proxy.url(""))"}}
            """)
        let environment = ["AWS_ACCESS_KEY_ID": Self.proxyKey, "AWS_SECRET_ACCESS_KEY": Self.proxySecret, "HOME": directory.url.path]
        let process = try BinaryRunner.start(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: environment)
        let part = directory.url.appendingPathComponent("out/object.bin.part").path
        let held = await BinaryRunner.signal(SIGKILL, to: process, when: { BinaryRunner.fileSize(part) >= 64 << 20 })
        await BinaryRunner.exit(of: process)
        try #require(held, "the download never reached 64 MiB")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out/object.bin").path))
        #expect(FileManager.default.createFile(atPath: gate, contents: Data()))

        let rerun = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: environment)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let job = try Self.report(directory)["big"] ?? [:]
        #expect((job["resumed_from"] as? Int ?? 0) >= 64 << 20, "\(job)")
        #expect((job["checksums"] as? [String: String])?["sha256"] == stored.output)
    }

    /// A 150 MB upload goes in parts (above 64 MiB): the proxy stores the first parts and holds
    /// the next until the test has `kill -9`ed batchfetch; the rerun asks the store which parts
    /// it holds, sends only the rest, completes the upload (the object is the file, its ETag a
    /// multipart one), and the run after it is up to date.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func aKilledMultipartUploadResumesItsParts() async throws {
        let directory = try TemporaryDirectory()
        let gate = directory.url.appendingPathComponent("release").path
        let moto = try await PythonService("s3_helper.py", ["serve", "{port}"])
        let proxy = try await PythonService("sigv4_proxy.py", ["{port}", moto.url(""), Self.proxyKey, Self.proxySecret, "\(40 << 20)", gate, "uploads"])
        defer { proxy.stop(); moto.stop() }
        #expect(try await PythonService.run("s3_helper.py", ["put", moto.url(""), "any", "any", "data", "seed", "/dev/null"]).status == 0)
        let size = 150_000_000
        let data = try #require(FileHandle(forReadingAtPath: "/dev/urandom")?.readData(ofLength: size))
        let environment = try Self.uploading(data, to: "s3://data/uploads/big.bin", through: proxy, in: directory)
        let process = try BinaryRunner.start(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: environment)
        let held = await BinaryRunner.signal(SIGKILL, to: process, when: { FileManager.default.fileExists(atPath: gate + ".held") })
        await BinaryRunner.exit(of: process)
        try #require(held, "the upload never reached the held part")
        #expect(FileManager.default.createFile(atPath: gate, contents: Data()))

        let rerun = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: environment)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let job = try Self.report(directory)["up"] ?? [:]
        #expect(job["status"] as? String == "uploaded")
        // Two 16 MiB parts were stored before the kill: the rerun sent the rest only.
        #expect((job["bytes_transferred"] as? Int ?? .max) <= size - (32 << 20), "\(job)")
        #expect((job["etag"] as? String)?.hasSuffix("-9\"") == true, "\(job)")
        let stored = try await PythonService.run("s3_helper.py", ["object", proxy.url(""), "data", "uploads/big.bin", Self.proxyKey, Self.proxySecret])
        let object = try JSONSerialization.jsonObject(with: Data(stored.output.utf8)) as? [String: Any]
        #expect(object?["size"] as? Int == size)
        #expect(object?["sha256"] as? String == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
        let again = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url, environment: environment)
        #expect(again.status == 0 && again.stderr.contains("1 up to date"), "\(again.stderr)")
    }
}
