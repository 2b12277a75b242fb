@testable import BatchFetchEngine
import BatchFetchSpec
import Crypto
import Foundation
import Testing

/// The pure decisions of signed checksum files (Docs/Signatures.md), without files, tools or
/// sockets: gpgv's status lines, minisign's and signify's formats, which signer a rule accepts,
/// and when a lock's signer is refused.
@Suite struct SignatureDecisionTests {
    static let fingerprint = "0123456789ABCDEF0123456789ABCDEF01234567"
    static let primary = "89ABCDEF0123456789ABCDEF0123456789ABCDEF"

    static func status(_ lines: String...) -> String {
        lines.map { "[GNUPG:] \($0)" }.joined(separator: "\n")
    }

    static let good = ["NEWSIG", "GOODSIG 0123456789ABCDEF Rel <rel@example.org>",
                       "VALIDSIG \(fingerprint) 2026-11-28 1796000000 0 4 0 22 10 01 \(primary)"]

    @Test func gpgvsStatusLinesDecideNotItsExitCode() {
        #expect(GPGStatus.decide(Self.good.map { "[GNUPG:] \($0)" }.joined(separator: "\n"), fingerprints: [])
            == .success(Signer(kind: "gpg", fingerprint: Self.primary)))
        // The signing subkey's or the primary key's fingerprint, spaces and case ignored.
        let text = Self.good.map { "[GNUPG:] \($0)" }.joined(separator: "\n")
        #expect((try? GPGStatus.decide(text, fingerprints: [Self.fingerprint.lowercased()]).get()) != nil)
        #expect((try? GPGStatus.decide(text, fingerprints: ["89AB CDEF 0123 4567 89AB  CDEF 0123 4567 89AB CDEF"]).get()) != nil)
        #expect(GPGStatus.decide(text, fingerprints: [String(repeating: "F", count: 40)])
            == .failure(.wrongKey("signed by key \(Self.primary), which is not among the manifest's fingerprints")))
    }

    @Test func aBadExpiredRevokedOrUnknownSignatureFails() {
        #expect(GPGStatus.decide(Self.status("NEWSIG", "BADSIG 0123 Rel"), fingerprints: [])
            == .failure(.invalid("the OpenPGP signature by key 0123 does not match the file")))
        // A bad signature beside a good one still fails: the file was changed.
        #expect(GPGStatus.decide((Self.good + ["NEWSIG", "BADSIG 4567 Other"]).map { "[GNUPG:] \($0)" }.joined(separator: "\n"),
                                 fingerprints: []) == .failure(.invalid("the OpenPGP signature by key 4567 does not match the file")))
        #expect(GPGStatus.decide(Self.status("NEWSIG", "EXPKEYSIG 0123 Rel", "VALIDSIG \(Self.fingerprint) x y z"), fingerprints: [])
            == .failure(.invalid("signed by key 0123, which has expired")))
        #expect(GPGStatus.decide(Self.status("NEWSIG", "REVKEYSIG 0123 Rel"), fingerprints: [])
            == .failure(.invalid("signed by key 0123, which was revoked")))
        #expect(GPGStatus.decide(Self.status("NEWSIG", "ERRSIG 0123 22 10 01 1796000000 9 -", "NO_PUBKEY 0123"), fingerprints: [])
            == .failure(.wrongKey("signed by key 0123, which the keyring does not hold")))
        #expect(GPGStatus.decide(Self.status("NODATA 1"), fingerprints: []) == .failure(.malformed("no OpenPGP signature found")))
        #expect(GPGStatus.decide("", fingerprints: []) == .failure(.malformed("no OpenPGP signature found")))
    }

    @Test func oneGoodSignatureAmongUnknownKeysPasses() {
        // Debian's Release files carry several signatures; the keyring holds some of the keys.
        let text = (["NEWSIG", "ERRSIG AAAA 22 10 01 1796000000 9 -", "NO_PUBKEY AAAA"] + Self.good).map { "[GNUPG:] \($0)" }
        #expect(GPGStatus.decide(text.joined(separator: "\n"), fingerprints: []) == .success(Signer(kind: "gpg", fingerprint: Self.primary)))
    }

    /// A minisign signature made as minisign makes one (`Ed` or `ED`, key number, signature;
    /// the global signature over signature and trusted comment).
    static func minisign(_ message: [UInt8], key: Curve25519.Signing.PrivateKey, number: [UInt8], prehashed: Bool = false,
                         comment: String = "timestamp:1 file:SUMS") throws -> String {
        let signed = prehashed ? Array(SHA512.hash(data: message)) : message  // a stand-in digest
        let signature = Array(try key.signature(for: signed))
        let global = Array(try key.signature(for: signature + Array(comment.utf8)))
        let line = Data(Array((prehashed ? "ED" : "Ed").utf8) + number + signature).base64EncodedString()
        return "untrusted comment: signature\n\(line)\ntrusted comment: \(comment)\n\(Data(global).base64EncodedString())\n"
    }

    @Test func minisignChecksTheKeyTheFileAndTheTrustedComment() throws {
        let secret = Curve25519.Signing.PrivateKey()
        let number: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let key = Ed25519Key(keyNumber: number, publicKey: Array(secret.publicKey.rawRepresentation))
        let message = Array("sums\n".utf8)
        let text = try Self.minisign(message, key: secret, number: number)
        let parsed = try MinisignSignature.parse(text).get()
        #expect(!parsed.prehashed && parsed.trustedComment == "timestamp:1 file:SUMS")
        #expect(parsed.verify({ _ in message }, key: key) == .success(Signer(kind: "minisign", keyID: "0807060504030201")))
        #expect(parsed.verify({ _ in Array("sums!\n".utf8) }, key: key) == .failure(.invalid("the signature does not match the file")))
        var changed = parsed
        changed.trustedComment = "timestamp:2 file:SUMS"
        #expect(changed.verify({ _ in message }, key: key)
            == .failure(.invalid("the trusted comment's global signature does not match (the comment was changed)")))
        let other = Ed25519Key(keyNumber: [9, 9, 9, 9, 9, 9, 9, 9], publicKey: key.publicKey)
        #expect(parsed.verify({ _ in message }, key: other) == .failure(.wrongKey("signed by minisign key 0807060504030201, not 0909090909090909")))
        // Prehashed: the verifier asks for the digest, not the bytes.
        let digest = Array(SHA512.hash(data: message))
        let prehashed = try MinisignSignature.parse(try Self.minisign(message, key: secret, number: number, prehashed: true)).get()
        #expect(prehashed.prehashed)
        #expect(prehashed.verify({ $0 ? digest : message }, key: key) == .success(Signer(kind: "minisign", keyID: "0807060504030201")))
    }

    @Test(arguments: ["", "untrusted comment: x\n", "untrusted comment: x\nnot base64\ntrusted comment: t\nAAAA\n",
                      "<html>quota exceeded</html>\n"])
    func aMalformedMinisignSignatureSaysSo(text: String) {
        guard case .failure(.malformed) = MinisignSignature.parse(text) else {
            Issue.record("parsed \(text.debugDescription)")
            return
        }
    }

    @Test func signifyChecksTheKeyNumberAndTheBytes() throws {
        let secret = Curve25519.Signing.PrivateKey()
        let number: [UInt8] = [0xAA, 0xBB, 0, 0, 0, 0, 0, 1]
        let key = Ed25519Key(keyNumber: number, publicKey: Array(secret.publicKey.rawRepresentation))
        let message = Array("SHA256 (a) = 00\n".utf8)
        let line = Data(Array("Ed".utf8) + number + Array(try secret.signature(for: message))).base64EncodedString()
        let parsed = try SignifySignature.parse("untrusted comment: verify with key.pub\n\(line)\n").get()
        #expect(parsed.verify(message, key: key) == .success(Signer(kind: "signify", keyID: "AABB000000000001")))
        #expect(parsed.verify(message + [0x0A], key: key) == .failure(.invalid("the signature does not match the file")))
        #expect(parsed.verify(message, key: Ed25519Key(keyNumber: [1, 1, 1, 1, 1, 1, 1, 1], publicKey: key.publicKey))
            == .failure(.wrongKey("signed by signify key AABB000000000001, not 0101010101010101")))
    }

    @Test func publicKeysParseFromALineOrAFile() throws {
        let line = "RWSDas+aJ0uXYg39t1HT7hYYSWQBDC3VSQiTQEzoU88j57s5jiox6HuJ"
        let fromLine = try Ed25519Key.parse(line).get()
        #expect(fromLine.minisignID == "62974B279ACF6A83")  // as `minisign -G` printed it
        #expect(fromLine.base64 == line)  // what `import --minisign-key` writes back
        #expect(try Ed25519Key.parse("untrusted comment: minisign public key 62974B279ACF6A83\n\(line)\n").get() == fromLine)
        #expect(Ed25519Key.parse("RWQnotbase64!!") == .failure(Ed25519Key.Malformed(message: "the key is not base64")))
        #expect(Ed25519Key.parse("\(line)\n\(line)") == .failure(Ed25519Key.Malformed(message: "expected one base64 key line, found 2")))
    }

    @Test func aRuleAcceptsItsOwnSignerOnly() {
        let key = Ed25519Key(keyNumber: [1, 2, 3, 4, 5, 6, 7, 8], publicKey: Array(repeating: 0, count: 32))
        let minisign = SignatureRule(kind: .minisign(key))
        #expect(minisign.accepts(Signer(kind: "minisign", keyID: "0807060504030201")))
        #expect(!minisign.accepts(Signer(kind: "minisign", keyID: "0102030405060708")))
        #expect(!minisign.accepts(Signer(kind: "signify", keyID: "0807060504030201")))
        #expect(SignatureRule(kind: .signify(key)).accepts(Signer(kind: "signify", keyID: "0102030405060708")))
        let anyKey = SignatureRule(kind: .gpg(keyring: "k.gpg", fingerprints: []))
        #expect(anyKey.accepts(Signer(kind: "gpg", fingerprint: Self.primary)))
        let listed = SignatureRule(kind: .gpg(keyring: "k.gpg", fingerprints: [Self.primary]))
        #expect(listed.accepts(Signer(kind: "gpg", fingerprint: Self.primary)) && !listed.accepts(Signer(kind: "gpg", fingerprint: Self.fingerprint)))
        let ssh = SignatureRule(kind: .ssh(allowedSigners: "s", identity: "rel@example.org", namespace: "file"))
        #expect(ssh.accepts(Signer(kind: "ssh", identity: "rel@example.org")) && !ssh.accepts(Signer(kind: "ssh", identity: "x@example.org")))
    }

    @Test func aLockPinnedUnderAnotherKeyOrWithoutOneIsRefused() {
        let key = Ed25519Key(keyNumber: [1, 2, 3, 4, 5, 6, 7, 8], publicKey: Array(repeating: 0, count: 32))
        var job = Job(id: "sums", urls: [TemplatedString(literal: "https://example.org/SUMS")], dest: TemplatedString(literal: "SUMS"),
                      source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        let entry = { (signer: Signer?) in
            LockFile.Entry(dest: "SUMS", size: 1, sha256: String(repeating: "0", count: 64), mirrors: [], signedBy: signer)
        }
        #expect(LockFile.signerMismatch(job, entry(nil)) == nil)
        #expect(LockFile.signerMismatch(job, entry(Signer(kind: "minisign", keyID: "0807060504030201")))
            == "job 'sums': the lock was pinned with a file signed by minisign key 0807060504030201 but the manifest names no signature")
        job.signature = SignatureRule(kind: .minisign(key))
        #expect(LockFile.signerMismatch(job, entry(Signer(kind: "minisign", keyID: "0807060504030201"))) == nil)
        #expect(LockFile.signerMismatch(job, entry(Signer(kind: "minisign", keyID: "AAAAAAAAAAAAAAAA")))
            == "job 'sums': the lock was pinned with a file signed by minisign key AAAAAAAAAAAAAAAA; the manifest names minisign key 0807060504030201")
        #expect(LockFile.signerMismatch(job, entry(nil)) == "job 'sums': the manifest names minisign key 0807060504030201 but the lock was pinned without a signature")
    }
}
