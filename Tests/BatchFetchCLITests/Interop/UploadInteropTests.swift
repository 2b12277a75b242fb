import Crypto
import Foundation
import Testing
import TestOrigin

/// Upload jobs against real receivers, through the batchfetch binary: nginx's WebDAV module
/// (PUT), an S3 API (moto's server, a presigned PUT URL made by boto3), and a multipart receiver
/// that parses the form with python-multipart. Each checks what the receiver stored through the
/// receiver's own means.
@Suite(.serialized, .enabled(if: NginxServer.binary != nil || NginxServer.required))
struct UploadInteropTests {
    static let size = 3 << 20
    static let data = Data(OriginContent.generated(size: Int64(size), seed: 15).allBytes)
    static let sha256 = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()

    private func jobs(_ directory: TemporaryDirectory) throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let jobs = object?["jobs"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: jobs.map { ($0["id"] as? String ?? "", $0) })
    }

    /// The mirror recipe: download from nginx, verify, PUT to nginx's WebDAV; a rerun sends
    /// nothing (both up to date); a store that refuses the size fails with its 413.
    @Test func fetchVerifyAndPutToNginxWebDAV() async throws {
        let nginx = try await NginxServer(locations: """
            location /dav/ { dav_methods PUT; create_full_put_path on; client_max_body_size 0; }
            location /small/ { dav_methods PUT; create_full_put_path on; client_max_body_size 1k; }
            """)
        defer { nginx.stop() }
        try nginx.write("src.bin", Self.data)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: fetch, url: "\(nginx.url("/src.bin"))", dest: raw/src.bin, checksum: "sha256:\(Self.sha256)"}
              - {id: mirror, upload: raw/src.bin, url: "\(nginx.url("/dav/mirror/src.bin"))", depends_on: [fetch]}
            """)
        let first = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url)
        #expect(first.status == 0, "\(first.stderr)")
        let stored = try Data(contentsOf: nginx.root.appendingPathComponent("dav/mirror/src.bin"))
        #expect(stored == Self.data)
        let mirror = try jobs(directory)["mirror"] ?? [:]
        #expect(mirror["status"] as? String == "uploaded")
        #expect(mirror["http_status"] as? Int == 201)
        #expect((mirror["checksums"] as? [String: String])?["sha256"] == Self.sha256)
        // nginx answers the PUT without an ETag: the one of its HEAD is recorded.
        #expect((mirror["etag"] as? String)?.hasPrefix("\"") == true)
        #expect(first.stderr.contains("uploaded    mirror"))
        let report = directory.url.appendingPathComponent("data/batchfetch-report.json").path
        let (valid, text) = try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/report.schema.json", report])
        #expect(valid == 0, "\(text)")

        let second = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(second.status == 0, "\(second.stderr)")
        let again = try jobs(directory)
        #expect(again["fetch"]?["status"] as? String == "up_to_date")
        #expect(again["mirror"]?["status"] as? String == "up_to_date")
        #expect((again["mirror"]?["evidence"] as? String)?.contains("ETag") == true)
        #expect(nginx.accessLog().components(separatedBy: "\"PUT ").count == 2)
        #expect(try await BinaryRunner.validateWithSchema(["--expect-valid", "schemas/report.schema.json", report]).status == 0)

        try directory.write("small.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: small, upload: raw/src.bin, url: "\(nginx.url("/small/src.bin"))"}
            """)
        let refused = try await BinaryRunner.run(["run", "small.yaml"], in: directory.url)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("HTTP 413"), "\(refused.stderr)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("data/raw/src.bin")) == Self.data)
    }

    /// An S3 bucket through a presigned PUT URL (a secret: it comes from the environment and is
    /// never printed), with Content-MD5: S3's ETag of the object is the file's MD5.
    @Test(.enabled { await PythonService.available("moto.server, boto3") || NginxServer.required })
    func putToS3ThroughAPresignedURL() async throws {
        let moto = try await PythonService("s3_helper.py", ["serve", "{port}"])
        defer { moto.stop() }
        let presigned = try await PythonService.run("s3_helper.py", ["presign", moto.url(""), "datasets", "train/src.bin"])
        #expect(presigned.status == 0)
        let directory = try TemporaryDirectory()
        try directory.write("data/src.bin", "")
        try Self.data.write(to: directory.url.appendingPathComponent("data/src.bin"))
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: s3, upload: src.bin, url: "${S3_PUT_URL}", content_md5: true}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: ["S3_PUT_URL": presigned.output])
        #expect(output.status == 0, "\(output.stderr)")
        let object = try await PythonService.run("s3_helper.py", ["object", moto.url(""), "datasets", "train/src.bin"])
        let stored = try JSONSerialization.jsonObject(with: Data(object.output.utf8)) as? [String: Any] ?? [:]
        let md5 = Insecure.MD5.hash(data: Self.data).map { String(format: "%02x", $0) }.joined()
        #expect(stored["sha256"] as? String == Self.sha256)
        #expect(stored["etag"] as? String == "\"\(md5)\"")
        let job = try jobs(directory)["s3"] ?? [:]
        #expect(job["status"] as? String == "uploaded")
        #expect(job["etag"] as? String == "\"\(md5)\"")
        #expect(job["checksum_verified"] as? Bool == true)
        #expect((job["checksums"] as? [String: String])?["md5"] == md5)
        let signature = presigned.output.components(separatedBy: "X-Amz-Signature=").last ?? "unset"
        let report = try String(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"), encoding: .utf8)
        #expect(!report.contains(signature) && !output.stderr.contains(signature))
    }

    /// A multipart POST read by a receiver that parses forms with python-multipart.
    @Test(.enabled { await PythonService.available("python_multipart") || NginxServer.required })
    func postAFormToAMultipartReceiver() async throws {
        let directory = try TemporaryDirectory()
        let received = directory.url.appendingPathComponent("received")
        try FileManager.default.createDirectory(at: received, withIntermediateDirectories: true)
        let receiver = try await PythonService("form_receiver.py", ["{port}", received.path])
        defer { receiver.stop() }
        try directory.write("data/src.bin", "")
        try Self.data.write(to: directory.url.appendingPathComponent("data/src.bin"))
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - id: post
                upload: src.bin
                url: "\(receiver.url("/api/datasets"))"
                method: POST
                headers: {Authorization: "Bearer ${API_TOKEN}"}
                form:
                  file_field: archive
                  content_type: application/octet-stream
                  fields: {name: train, version: "3"}
            """)
        let output = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url, environment: ["API_TOKEN": "tok-123"])
        #expect(output.status == 0, "\(output.stderr)")
        let record = try JSONSerialization.jsonObject(
            with: Data(contentsOf: received.appendingPathComponent("1.json"))) as? [String: Any] ?? [:]
        let parts = record["parts"] as? [[String: Any]] ?? []
        #expect(parts.map { $0["name"] as? String ?? "" } == ["name", "version", "archive"])
        #expect(parts.first?["text"] as? String == "train")
        #expect(parts.last?["fileName"] as? String == "src.bin")
        #expect(parts.last?["sha256"] as? String == Self.sha256)
        #expect(record["authorization"] as? String == "Bearer tok-123")
        #expect((record["content_digest"] as? String)?.hasPrefix("sha-256=:") == true)
        let job = try jobs(directory)["post"] ?? [:]
        #expect(job["status"] as? String == "uploaded" && job["http_status"] as? Int == 201)
        #expect(!FileManager.default.fileExists(atPath: received.appendingPathComponent("2.json").path))
    }
}
