@testable import BatchFetchEngine
@testable import BatchFetchFiles
import BatchFetchSpec
import Crypto
import Foundation
import TestOrigin
import Testing

/// Signed checksum files on real runs (Docs/Signatures.md): keys and signatures made by the
/// reference tools themselves — `minisign`, `signify-openbsd`, `gpg`, `ssh-keygen` — and a
/// TestOrigin serving the SUMS file, its signature and the files it lists.
@Suite struct SignatureTests {
    /// Keys and signatures made by the real tools in a directory of their own.
    struct Tools {
        let directory: URL

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-keys-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        func write(_ name: String, _ data: Data) throws { try data.write(to: directory.appendingPathComponent(name)) }

        func read(_ name: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(name)) }

        /// Runs a tool in the directory; fails the test with its output when it fails.
        @discardableResult
        func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> String {
            var env = ProcessInfo.processInfo.environment
            env["GNUPGHOME"] = path("gnupg")
            env.merge(environment) { _, new in new }
            let run = try await ToolRun.run(arguments, in: directory, environment: env)
            try #require(run.status == 0, "\(arguments.joined(separator: " ")): \(run.output)\(String(decoding: run.stderr, as: UTF8.self))")
            return run.output
        }

        /// A minisign key pair without a password (`name.pub`, `name.key`); its key id as
        /// minisign prints it.
        func minisignKey(_ name: String) async throws -> String {
            try await run(["minisign", "-G", "-W", "-p", "\(name).pub", "-s", "\(name).key"])
            // minisign prints the id without leading zeros; batchfetch writes all 16 digits.
            let comment = String(decoding: try read("\(name).pub"), as: UTF8.self).split(separator: "\n")[0]
            let printed = String(comment.split(separator: " ").last ?? "")
            return String(repeating: "0", count: max(0, 16 - printed.count)) + printed
        }

        func gpgHome() throws {
            try FileManager.default.createDirectory(atPath: path("gnupg"), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }

        /// A GPG signing key for `email` in the test's GNUPGHOME; its fingerprint.
        func gpgKey(_ email: String, extra: [String] = [], expiry: String = "1y") async throws -> String {
            try gpgHome()
            try await run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", ""] + extra
                + ["--quick-gen-key", "Test <\(email)>", "ed25519", "sign", expiry])
            let listing = try await run(["gpg", "--batch", "--with-colons", "--list-keys", email])
            return listing.split(separator: "\n").first { $0.hasPrefix("fpr:") }.map { String($0.split(separator: ":", omittingEmptySubsequences: false)[9]) } ?? ""
        }
    }

    static let files = (0..<3).map { index in (name: "part-\(index).bin", data: Data((0..<5000).map { UInt8(($0 * 7 + index) & 0xff) })) }

    static var sums: String {
        files.map { "\(SHA256.hash(data: $0.data).map { String(format: "%02x", $0) }.joined())  \($0.name)\n" }.joined()
    }

    /// A world serving the files and `sums` as SHA256SUMS (its signature is the test's to serve).
    private func world(sums: String = Self.sums) async throws -> Harness {
        let world = try await Harness()
        for file in Self.files { world.origin.serve("/rel/\(file.name)", .bytes(Array(file.data))) }
        world.origin.serve("/rel/SHA256SUMS", .text(sums))
        return world
    }

    private static func manifest(_ signature: String, sigURL: String? = nil) -> String {
        """
        version: 1
        jobs:
          - id: sums
            url: '{origin}/rel/SHA256SUMS'
            dest: SHA256SUMS
            signature: \(signature)
        \(sigURL.map { "    sig_url: '\($0)'\n" } ?? "")\
          - {id: a, url: '{origin}/rel/part-0.bin', dest: part-0.bin, checksums_from: sums}
          - {id: b, url: '{origin}/rel/part-1.bin', dest: part-1.bin, checksums_from: sums}
        """
    }

    /// The sum job and both dependents published, each naming the signer; a rerun is up to date
    /// and asks for nothing, the signer still named.
    private func expectTrusted(_ world: Harness, _ yaml: String, signer: Signer) async throws {
        let report = try await world.run(yaml)
        #expect(report.status == .succeeded, "\(report.jobs.map { "\($0.id): \($0.error?.message ?? "")" })")
        #expect(report.jobs.map(\.signedBy) == [signer, nil, nil])
        #expect(report.jobs.map(\.checksumsSignedBy) == [nil, signer, signer])
        #expect(world.exists("SHA256SUMS") && world.exists("part-0.bin") && world.exists("part-1.bin"))
        let asked = world.origin.requests("/rel/SHA256SUMS").count
        let rerun = try await world.run(yaml)
        #expect(rerun.jobs.map(\.status) == [.upToDate, .upToDate, .upToDate])
        #expect(rerun.jobs.map(\.checksumsSignedBy) == [nil, signer, signer])
        #expect(world.origin.requests("/rel/SHA256SUMS").count == asked)
    }

    /// Nothing of the sum job or its dependents published, each `signature_invalid`, and no
    /// request for a dependent's file.
    private func expectRefused(_ world: Harness, _ yaml: String, saying words: String) async throws {
        let report = try await world.run(yaml)
        #expect(report.status == .failed)
        #expect(report.jobs.map(\.status) == [.failed, .failed, .failed])
        #expect(report.jobs.map { $0.error?.code } == [.signatureInvalid, .signatureInvalid, .signatureInvalid])
        let message = report.jobs[0].error?.message ?? ""
        #expect(message.contains(words), "\(message)")
        #expect(!world.exists("SHA256SUMS") && !world.exists("part-0.bin"))
        #expect(world.origin.requests("/rel/part-0.bin").isEmpty && world.origin.requests("/rel/part-1.bin").isEmpty)
    }

    @Test(arguments: [false, true])
    func minisignPrehashedAndLegacySignaturesAreTrusted(legacy: Bool) async throws {
        let tools = try Tools()
        let keyID = try await tools.minisignKey("k")
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["minisign", "-S", "-s", "k.key", "-m", "SHA256SUMS", "-t", "release 1.0"] + (legacy ? ["-l"] : []))
        let world = try await world()
        world.origin.serve("/rel/SHA256SUMS.minisig", .bytes(Array(try tools.read("SHA256SUMS.minisig"))))
        let key = String(decoding: try tools.read("k.pub"), as: UTF8.self).split(separator: "\n")[1]
        try await expectTrusted(world, Self.manifest("{minisign: {public_key: '\(key)'}}"), signer: Signer(kind: "minisign", keyID: keyID))
        await world.close()
    }

    @Test func aMinisignedFileChangedAfterSigningIsRefused() async throws {
        let tools = try Tools()
        _ = try await tools.minisignKey("k")
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["minisign", "-S", "-s", "k.key", "-m", "SHA256SUMS"])
        // The mirror serves its own digest for part-0 with the publisher's signature.
        let world = try await world(sums: Self.sums.replacingOccurrences(of: "part-0.bin", with: "part-0.bin\n" + String(repeating: "0", count: 64) + "  extra.bin"))
        world.origin.serve("/rel/SHA256SUMS.minisig", .bytes(Array(try tools.read("SHA256SUMS.minisig"))))
        try await expectRefused(world, Self.manifest("{minisign: {key_file: '\(tools.path("k.pub"))'}}"), saying: "does not match the file")
        await world.close()
    }

    @Test func aChangedTrustedCommentIsRefused() async throws {
        let tools = try Tools()
        _ = try await tools.minisignKey("k")
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["minisign", "-S", "-s", "k.key", "-m", "SHA256SUMS", "-t", "version 1.0"])
        let signature = String(decoding: try tools.read("SHA256SUMS.minisig"), as: UTF8.self)
            .replacingOccurrences(of: "trusted comment: version 1.0", with: "trusted comment: version 9.9")
        let world = try await world()
        world.origin.serve("/rel/SHA256SUMS.minisig", .text(signature))
        try await expectRefused(world, Self.manifest("{minisign: {key_file: '\(tools.path("k.pub"))'}}"), saying: "trusted comment")
        await world.close()
    }

    @Test func aSignatureByAnotherKeyIsRefusedNamingBoth() async throws {
        let tools = try Tools()
        let trusted = try await tools.minisignKey("trusted")
        let other = try await tools.minisignKey("other")
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["minisign", "-S", "-s", "other.key", "-m", "SHA256SUMS"])
        let world = try await world()
        world.origin.serve("/rel/SHA256SUMS.minisig", .bytes(Array(try tools.read("SHA256SUMS.minisig"))))
        try await expectRefused(world, Self.manifest("{minisign: {key_file: '\(tools.path("trusted.pub"))'}}"),
                                saying: "signed by minisign key \(other), not \(trusted)")
        await world.close()
    }

    /// A signature that is not served, is empty, or is not a signature.
    @Test(arguments: ["missing", "empty", "garbage"])
    func aMissingEmptyOrMalformedSignatureIsRefused(kind: String) async throws {
        let tools = try Tools()
        _ = try await tools.minisignKey("k")
        let world = try await world()
        switch kind {
        case "empty": world.origin.serve("/rel/SHA256SUMS.minisig", .text(""))
        case "garbage": world.origin.serve("/rel/SHA256SUMS.minisig", .text("<html>quota exceeded</html>\n"))
        default: break
        }
        let words = ["missing": "no signature: HTTP 404", "empty": "empty", "garbage": "malformed signature"][kind]!
        try await expectRefused(world, Self.manifest("{minisign: {key_file: '\(tools.path("k.pub"))'}}"), saying: words)
        await world.close()
    }

    @Test func signifySignaturesAreTrustedAndTamperingIsRefused() async throws {
        let tools = try Tools()
        try await tools.run(["signify-openbsd", "-G", "-n", "-p", "k.pub", "-s", "k.sec"])
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["signify-openbsd", "-S", "-s", "k.sec", "-m", "SHA256SUMS", "-x", "SHA256SUMS.sig"])
        let key = try #require(try? Ed25519Key.parse(String(decoding: tools.read("k.pub"), as: UTF8.self)).get())
        let good = try await world()
        good.origin.serve("/rel/SHA256SUMS.sig", .bytes(Array(try tools.read("SHA256SUMS.sig"))))
        let yaml = Self.manifest("{signify: {key_file: '\(tools.path("k.pub"))'}}")
        try await expectTrusted(good, yaml, signer: Signer(kind: "signify", keyID: key.signifyID))
        await good.close()

        let bad = try await world(sums: Self.sums + "# appended\n")
        bad.origin.serve("/rel/SHA256SUMS.sig", .bytes(Array(try tools.read("SHA256SUMS.sig"))))
        try await expectRefused(bad, yaml, saying: "does not match the file")
        await bad.close()
    }

    /// OpenBSD's layout: `SHA256.sig` is the signature with the list embedded after it
    /// (`signify -S -e`); the job names it, no other signature is fetched, only the embedded
    /// list is believed, and a changed list is refused.
    @Test func anEmbeddedSignifySignatureCarriesItsList() async throws {
        let tools = try Tools()
        try await tools.run(["signify-openbsd", "-G", "-n", "-p", "k.pub", "-s", "k.sec"])
        try tools.write("SHA256", Data(Self.sums.utf8))
        try await tools.run(["signify-openbsd", "-S", "-e", "-s", "k.sec", "-m", "SHA256", "-x", "SHA256.sig"])
        let embedded = String(decoding: try tools.read("SHA256.sig"), as: UTF8.self)
        let key = try #require(try? Ed25519Key.parse(String(decoding: tools.read("k.pub"), as: UTF8.self)).get())
        let yaml = Self.manifest("{signify: {key_file: '\(tools.path("k.pub"))'}}").replacingOccurrences(of: "/rel/SHA256SUMS'", with: "/rel/SHA256.sig'")

        let world = try await world()
        world.origin.serve("/rel/SHA256.sig", .text(embedded))
        let report = try await world.run(yaml)
        let signer = Signer(kind: "signify", keyID: key.signifyID)
        #expect(report.status == .succeeded, "\(report.jobs.map { $0.error?.message ?? "" })")
        #expect(report.jobs.map(\.checksumsSignedBy) == [nil, signer, signer])
        #expect(world.origin.requests("/rel/SHA256.sig.sig").isEmpty)
        await world.close()

        let changed = try await self.world()
        changed.origin.serve("/rel/SHA256.sig", .text(embedded.replacingOccurrences(of: "part-1.bin", with: "part-8.bin")))
        let refused = try await changed.run(yaml)
        #expect(refused.jobs.map { $0.error?.code } == [.signatureInvalid, .signatureInvalid, .signatureInvalid])
        #expect(changed.origin.requests("/rel/part-0.bin").isEmpty)
        await changed.close()
    }

    @Test func gpgDetachedAndClearSignedFilesAreTrustedAndOnlyTheSignedTextCounts() async throws {
        let tools = try Tools()
        let fingerprint = try await tools.gpgKey("release@example.org")
        try await tools.run(["gpg", "--batch", "--export", "-o", "keyring.gpg"])
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["gpg", "--batch", "--armor", "--detach-sign", "-o", "SHA256SUMS.asc", "SHA256SUMS"])
        try await tools.run(["gpg", "--batch", "--clearsign", "-o", "SHA256SUMS.clear", "SHA256SUMS"])
        let signer = Signer(kind: "gpg", fingerprint: fingerprint)

        let detached = try await world()
        detached.origin.serve("/rel/SHA256SUMS.asc", .bytes(Array(try tools.read("SHA256SUMS.asc"))))
        try await expectTrusted(detached, Self.manifest("{gpg: {keyring: '\(tools.path("keyring.gpg"))', fingerprints: ['\(fingerprint)']}}"), signer: signer)
        await detached.close()

        // Lines after the signature are not signed: a digest there is not believed.
        let extra = Data("not signed\n".utf8)
        let unsigned = "\(SHA256.hash(data: extra).map { String(format: "%02x", $0) }.joined())  extra.bin\n"
        let clear = String(decoding: try tools.read("SHA256SUMS.clear"), as: UTF8.self)
        let world = try await world(sums: clear + unsigned)
        world.origin.serve("/rel/extra.bin", .bytes(Array(extra)))
        let yaml = Self.manifest("{gpg: {keyring: '\(tools.path("keyring.gpg"))'}}")
            + "\n  - {id: c, url: '{origin}/rel/extra.bin', dest: extra.bin, checksums_from: sums}\n"
        let report = try await world.run(yaml)
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded, .downloaded, .failed])
        #expect(report.jobs[0].signedBy == signer && report.jobs[1].checksumsSignedBy == signer)
        #expect(report.jobs[3].error?.code == .checksumUnavailable, "\(String(describing: report.jobs[3].error))")
        #expect(world.origin.requests("/rel/SHA256SUMS.asc").isEmpty)
        await world.close()

        // A clear-signed body changed after signing.
        let tampered = try await self.world(sums: clear.replacingOccurrences(of: "part-1.bin", with: "part-9.bin"))
        try await expectRefused(tampered, Self.manifest("{gpg: {keyring: '\(tools.path("keyring.gpg"))'}}"), saying: "does not match the file")
        await tampered.close()
    }

    @Test func gpgRefusesAnExpiredKeyAndAKeyNotAmongTheFingerprints() async throws {
        let tools = try Tools()
        // Made and used in 2020 with a one-day life: expired now.
        let past = ["--faked-system-time", "20200101T000000!"]
        _ = try await tools.gpgKey("old@example.org", extra: past, expiry: "1d")
        try await tools.run(["gpg", "--batch", "--export", "-o", "keyring.gpg"])
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["gpg", "--batch"] + past + ["--armor", "--detach-sign", "-o", "SHA256SUMS.asc", "SHA256SUMS"])
        let expired = try await world()
        expired.origin.serve("/rel/SHA256SUMS.asc", .bytes(Array(try tools.read("SHA256SUMS.asc"))))
        try await expectRefused(expired, Self.manifest("{gpg: {keyring: '\(tools.path("keyring.gpg"))'}}"), saying: "expired")
        await expired.close()

        let fresh = try Tools()
        let fingerprint = try await fresh.gpgKey("new@example.org")
        try await fresh.run(["gpg", "--batch", "--export", "-o", "keyring.gpg"])
        try fresh.write("SHA256SUMS", Data(Self.sums.utf8))
        try await fresh.run(["gpg", "--batch", "--armor", "--detach-sign", "-o", "SHA256SUMS.asc", "SHA256SUMS"])
        let other = try await world()
        other.origin.serve("/rel/SHA256SUMS.asc", .bytes(Array(try fresh.read("SHA256SUMS.asc"))))
        let elsewhere = String(repeating: "AB", count: 20)
        try await expectRefused(other, Self.manifest("{gpg: {keyring: '\(fresh.path("keyring.gpg"))', fingerprints: ['\(elsewhere)']}}"),
                                saying: "signed by key \(fingerprint), which is not among the manifest's fingerprints")
        await other.close()
    }

    @Test func sshSignaturesAreTrustedForTheirIdentityAndNamespaceOnly() async throws {
        let tools = try Tools()
        try await tools.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "release", "-f", "id"])
        let publicKey = String(decoding: try tools.read("id.pub"), as: UTF8.self).split(separator: " ").prefix(2).joined(separator: " ")
        try tools.write("allowed_signers", Data("release@example.org \(publicKey)\n".utf8))
        try tools.write("SHA256SUMS", Data(Self.sums.utf8))
        try await tools.run(["ssh-keygen", "-Y", "sign", "-f", "id", "-n", "file", "SHA256SUMS"])
        let signature = Array(try tools.read("SHA256SUMS.sig"))
        let signers = tools.path("allowed_signers")

        let good = try await world()
        good.origin.serve("/rel/SHA256SUMS.sig", .bytes(signature))
        try await expectTrusted(good, Self.manifest("{ssh: {allowed_signers: '\(signers)', identity: release@example.org}}"),
                                signer: Signer(kind: "ssh", identity: "release@example.org"))
        await good.close()

        let tampered = try await world(sums: Self.sums.replacingOccurrences(of: "part-1", with: "part-7"))
        tampered.origin.serve("/rel/SHA256SUMS.sig", .bytes(signature))
        try await expectRefused(tampered, Self.manifest("{ssh: {allowed_signers: '\(signers)', identity: release@example.org}}"),
                                saying: "ssh-keygen")
        await tampered.close()

        let otherNamespace = try await world()
        otherNamespace.origin.serve("/rel/SHA256SUMS.sig", .bytes(signature))
        try await expectRefused(otherNamespace, Self.manifest("{ssh: {allowed_signers: '\(signers)', identity: release@example.org, namespace: git}}"),
                                saying: "namespace git")
        await otherNamespace.close()
    }
}
