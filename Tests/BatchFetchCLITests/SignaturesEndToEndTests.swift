import Crypto
import Foundation
import Testing
import TestOrigin

/// Signed checksum files through the binary (Docs/Signatures.md): the lock's `signed_by`, `run
/// --locked` and `verify` refusing a lock pinned under another key, `check` re-verifying, and
/// `import` of a signed SHA256SUMS — with keys and signatures made by `minisign` and `gpg`.
@Suite struct SignaturesEndToEndTests {
    static let files = (0..<2).map { index in (name: "f\(index).bin", data: Data((0..<3000).map { UInt8(($0 * 13 + index) & 0xff) })) }
    static var sums: String {
        files.map { "\(SHA256.hash(data: $0.data).map { String(format: "%02x", $0) }.joined())  \($0.name)\n" }.joined()
    }

    /// Runs a tool in `directory`, requiring success.
    @discardableResult
    private func tool(_ arguments: [String], in directory: TemporaryDirectory) async throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["GNUPGHOME"] = directory.url.appendingPathComponent("gnupg").path
        let run = try await ToolRun.run(arguments, in: directory.url, environment: environment)
        try #require(run.status == 0, "\(arguments): \(run.output)\(String(decoding: run.stderr, as: UTF8.self))")
        return run.output
    }

    /// An origin serving the files, SHA256SUMS and its minisign signature by key `k` (made in
    /// `directory`, with a second key `other`), and a manifest naming `k`'s public key file.
    private func world() async throws -> (TestOrigin, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        for key in ["k", "other"] { try await tool(["minisign", "-G", "-W", "-p", "\(key).pub", "-s", "\(key).key"], in: directory) }
        try directory.write("sign/SHA256SUMS", Self.sums)
        try await tool(["minisign", "-S", "-s", "k.key", "-m", "sign/SHA256SUMS"], in: directory)
        let origin = try await TestOrigin.start()
        for file in Self.files { origin.serve("/rel/\(file.name)", .bytes(Array(file.data))) }
        origin.serve("/rel/SHA256SUMS", .text(Self.sums))
        origin.serve("/rel/SHA256SUMS.minisig", .bytes(Array(try Data(contentsOf: directory.url.appendingPathComponent("sign/SHA256SUMS.minisig")))))
        try directory.write("m.yaml", manifest(origin, key: "k.pub"))
        return (origin, directory)
    }

    private func manifest(_ origin: TestOrigin, key: String) -> String {
        """
        version: 1
        output_dir: data
        jobs:
          - {id: sums, url: "\(origin.url("/rel/SHA256SUMS"))", dest: SHA256SUMS, signature: {minisign: {key_file: \(key)}}}
          - {id: f0, url: "\(origin.url("/rel/f0.bin"))", checksums_from: sums}
          - {id: f1, url: "\(origin.url("/rel/f1.bin"))", checksums_from: sums}
        """
    }

    /// A GPG signing key in `directory`'s own GNUPGHOME, exported to `keyring.gpg`.
    private func gpgKeyring(in directory: TemporaryDirectory) async throws {
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("gnupg"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try await tool(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", "Rel <rel@example.org>",
                        "ed25519", "sign", "1y"], in: directory)
        try await tool(["gpg", "--batch", "--export", "-o", "keyring.gpg"], in: directory)
    }

    private func lock(_ directory: TemporaryDirectory) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.url.appendingPathComponent("m.lock.json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    @Test func theLockRecordsTheSignerAndALockOfAnotherKeyIsRefused() async throws {
        let (origin, directory) = try await world()
        let pin = try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url)
        #expect(pin.status == 0, "\(pin.stderr)")
        let jobs = try lock(directory)["jobs"] as? [String: [String: Any]] ?? [:]
        let signer = jobs["sums"]?["signed_by"] as? [String: String]
        #expect(signer?["kind"] == "minisign" && signer?["key_id"]?.count == 16, "\(jobs)")
        #expect(jobs["f0"]?["signed_by"] == nil)
        let valid = try await BinaryRunner.validateWithSchema(["schemas/lock.schema.json", directory.url.appendingPathComponent("m.lock.json").path])
        #expect(valid.status == 0, "\(valid.output)")

        let locked = try await BinaryRunner.run(["run", "m.yaml", "--locked", "--progress", "none"], in: directory.url)
        #expect(locked.status == 0, "\(locked.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let entries = report?["jobs"] as? [[String: Any]] ?? []
        #expect(entries.compactMap { ($0["checksums_signed_by"] as? [String: String])?["key_id"] } == [signer?["key_id"], signer?["key_id"]])

        // The manifest now names another key: the lock vouches for nothing.
        try directory.write("m.yaml", manifest(origin, key: "other.pub"))
        let requests = origin.requests("/rel/SHA256SUMS").count
        for command in [["run", "m.yaml", "--locked", "--progress", "none"], ["verify", "m.yaml"]] {
            let refused = try await BinaryRunner.run(command, in: directory.url)
            #expect(refused.status == 3, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("job 'sums': the lock was pinned with a file signed by minisign key \(signer?["key_id"] ?? "?")"),
                    "\(refused.stderr)")
        }
        #expect(origin.requests("/rel/SHA256SUMS").count == requests, "refused before any request")
        try await origin.shutdown()
    }

    @Test func checkReverifiesAndASignatureThatNoLongerVerifiesIsDrift() async throws {
        let (origin, directory) = try await world()
        #expect(try await BinaryRunner.run(["pin", "m.yaml"], in: directory.url).status == 0)
        let clean = try await BinaryRunner.run(["check", "m.yaml"], in: directory.url)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(origin.requests("/rel/SHA256SUMS.minisig").count >= 2, "pin's run and check's each fetched it")

        // The mirror now serves the sums signed by another key.
        try directory.write("sign/SHA256SUMS", Self.sums)
        try await tool(["minisign", "-S", "-s", "other.key", "-m", "sign/SHA256SUMS"], in: directory)
        origin.serve("/rel/SHA256SUMS.minisig", .bytes(Array(try Data(contentsOf: directory.url.appendingPathComponent("sign/SHA256SUMS.minisig")))))
        let drift = try await BinaryRunner.run(["check", "m.yaml", "--report", "check.json"], in: directory.url)
        #expect(drift.status == 3, "\(drift.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("check.json"))) as? [String: Any]
        let sums = (report?["jobs"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "sums" }
        #expect(sums?["status"] as? String == "drift")
        #expect((sums?["error"] as? [String: Any])?["code"] as? String == "signature_invalid")
        try await origin.shutdown()
    }

    @Test func importOfASignedSumsFileVerifiesItAndKeepsTheSignature() async throws {
        let (origin, directory) = try await world()
        let base = origin.url("/rel/")
        try FileManager.default.copyItem(at: directory.url.appendingPathComponent("sign/SHA256SUMS.minisig"),
                                         to: directory.url.appendingPathComponent("SHA256SUMS.minisig"))
        try directory.write("SHA256SUMS", Self.sums)

        let wrong = try await BinaryRunner.run(["import", "SHA256SUMS", "--base-url", base, "--minisign-key", "other.pub", "-o", "bad.yaml"],
                                               in: directory.url)
        #expect(wrong.status == 2 && wrong.stderr.contains("does not verify"), "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("bad.yaml").path))

        let unchecked = try await BinaryRunner.run(["import", "SHA256SUMS", "--base-url", base], in: directory.url)
        #expect(unchecked.status == 0 && unchecked.stderr.contains("its signature was not checked"), "\(unchecked.stderr)")

        let imported = try await BinaryRunner.run(["import", "SHA256SUMS", "--base-url", base, "--minisign-key", "k.pub", "-o", "i.yaml"],
                                                  in: directory.url)
        #expect(imported.status == 0, "\(imported.stderr)")
        let text = try String(contentsOf: directory.url.appendingPathComponent("i.yaml"), encoding: .utf8)
        #expect(text.contains("signature: {minisign: {public_key: ") && text.contains("checksums_from: \"SHA256SUMS\""), "\(text)")
        #expect(!text.contains("checksum: "), "digests come from the signed file, not inline")
        let run = try await BinaryRunner.run(["run", "i.yaml", "--progress", "none"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)")
        try await origin.shutdown()
    }

    /// A release file itself signed (minisign's prehashed form over 8 MiB, BLAKE2b streamed),
    /// served by nginx at 2 MB/s: killed with SIGKILL a quarter in, the rerun resumes with
    /// nginx's ETag and publishes only once the whole file's signature verifies; a third run is
    /// up to date without a request.
    @Test(.enabled(if: NginxServer.binary != nil || NginxServer.required))
    func aSignedFileKilledMidwayIsResumedAndVerifiedWhole() async throws {
        let nginx = try await NginxServer()
        defer { nginx.stop() }
        let directory = try TemporaryDirectory()
        let data = Data(OriginContent.generated(size: 8 << 20, seed: 77).allBytes)
        try directory.write("sign/tool.bin", "")
        try data.write(to: directory.url.appendingPathComponent("sign/tool.bin"))
        try await tool(["minisign", "-G", "-W", "-p", "k.pub", "-s", "k.key"], in: directory)
        try await tool(["minisign", "-S", "-s", "k.key", "-m", "sign/tool.bin"], in: directory)
        try nginx.write("slow/tool.bin", data)
        try nginx.write("slow/tool.bin.minisig", try Data(contentsOf: directory.url.appendingPathComponent("sign/tool.bin.minisig")))
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: tool, url: "\(nginx.url("/slow/tool.bin"))", signature: {minisign: {key_file: k.pub}}}
            """)
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/tool.bin.part").path
        let held = await BinaryRunner.signal(SIGKILL, to: process) { BinaryRunner.fileSize(part) >= Int64(2 << 20) }
        await BinaryRunner.exit(of: process)
        try #require(held, "the download never reached a quarter")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data/tool.bin").path))

        let rerun = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let job = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json")))
            as? [String: Any])?["jobs"] as? [[String: Any]]).first ?? [:]
        #expect(job["status"] as? String == "downloaded" && (job["resumed_from"] as? Int ?? 0) > 0, "\(job)")
        #expect((job["signed_by"] as? [String: String])?["kind"] == "minisign", "\(job)")
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("data/tool.bin")) == data)

        let asked = nginx.accessLog().components(separatedBy: "\n").filter { $0.contains("tool.bin") }.count
        let again = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url)
        #expect(again.status == 0 && again.stderr.contains("1 up to date"), "\(again.stderr)")
        #expect(nginx.accessLog().components(separatedBy: "\n").filter { $0.contains("tool.bin") }.count == asked)
    }

    /// Without `gpgv` on PATH a GPG-signed file fails saying which package gives it, and its
    /// dependents with it.
    @Test func aMissingVerifierIsAClearError() async throws {
        let directory = try TemporaryDirectory()
        try await gpgKeyring(in: directory)
        try directory.write("sign/SHA256SUMS", Self.sums)
        try await tool(["gpg", "--batch", "--armor", "--detach-sign", "-o", "sign/SHA256SUMS.asc", "sign/SHA256SUMS"], in: directory)
        let origin = try await TestOrigin.start()
        for file in Self.files { origin.serve("/rel/\(file.name)", .bytes(Array(file.data))) }
        origin.serve("/rel/SHA256SUMS", .text(Self.sums))
        origin.serve("/rel/SHA256SUMS.asc", .bytes(Array(try Data(contentsOf: directory.url.appendingPathComponent("sign/SHA256SUMS.asc")))))
        try directory.write("m.yaml", manifest(origin, key: "k.pub").replacingOccurrences(of: "{minisign: {key_file: k.pub}}", with: "{gpg: {keyring: keyring.gpg}}"))
        let found = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url)
        #expect(found.status == 0, "\(found.stderr)")
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("data"))
        let missing = try await BinaryRunner.run(["run", "m.yaml", "--progress", "none"], in: directory.url,
                                                 environment: ["PATH": directory.url.appendingPathComponent("empty").path])
        #expect(missing.status == 1, "\(missing.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let errors = (report?["jobs"] as? [[String: Any]] ?? []).map { ($0["error"] as? [String: Any])?["message"] as? String ?? "" }
        #expect(errors.count == 3 && errors.allSatisfy { $0.contains("gpgv is not installed (Debian: apt install gpgv)") }, "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data/SHA256SUMS").path))
        try await origin.shutdown()
    }

    @Test func importOfAClearSignedSumsFileWithAKeyring() async throws {
        let directory = try TemporaryDirectory()
        try await gpgKeyring(in: directory)
        try directory.write("plain", Self.sums)
        try await tool(["gpg", "--batch", "--clearsign", "-o", "SHA256SUMS", "plain"], in: directory)
        let signed = try await BinaryRunner.run(["import", "SHA256SUMS", "--base-url", "https://example.org/rel/", "--keyring", "keyring.gpg"],
                                                in: directory.url)
        #expect(signed.status == 0, "\(signed.stderr)")
        #expect(signed.stderr.contains("good signature by gpg key"), "\(signed.stderr)")
        #expect(signed.stdout.contains("signature: {gpg: {keyring: ") && signed.stdout.components(separatedBy: "checksums_from:").count == 3,
                "\(signed.stdout)")

        // A body changed after signing writes nothing.
        let text = try String(contentsOf: directory.url.appendingPathComponent("SHA256SUMS"), encoding: .utf8)
        try directory.write("SHA256SUMS", text.replacingOccurrences(of: "f1.bin", with: "f9.bin"))
        let tampered = try await BinaryRunner.run(["import", "SHA256SUMS", "--base-url", "https://example.org/rel/", "--keyring", "keyring.gpg"],
                                                  in: directory.url)
        #expect(tampered.status == 2 && tampered.stdout.isEmpty && tampered.stderr.contains("does not verify"), "\(tampered.stderr)")
    }
}
