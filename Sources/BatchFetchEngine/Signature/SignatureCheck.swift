import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// Checks a file against the signature its job's `signature:` names (Docs/Signatures.md):
/// minisign and signify in process, GPG through Debian's `gpgv` and SSH through
/// `ssh-keygen -Y verify`, each run without a shell, with a timeout, in a directory of its own.
/// The decisions are the pure types' (``MinisignSignature``, ``SignifySignature``,
/// ``GPGStatus``); this only feeds them and runs the tools.
package struct SignatureCheck: Sendable {
    /// What a verified signature gives: who signed, and for a clear-signed file the signed text,
    /// the only part of it whose digests count.
    package struct Verified: Sendable, Equatable {
        package var signer: Signer
        package var signedText: String?
    }

    package let rule: SignatureRule
    /// How long `gpgv` or `ssh-keygen` may take.
    var timeout: Double = 30

    package init(rule: SignatureRule) {
        self.rule = rule
    }
    /// The largest file a legacy (not prehashed) signature is checked over in memory.
    static let inMemoryLimit = 1 << 30
    /// The largest signature file fetched.
    static let signatureLimit = 64 << 10

    /// Whether the file at `path` carries its signature inside, so that none is fetched: a
    /// clear-signed OpenPGP message, or a signify signature with the message embedded after it
    /// (`signify -S -e`: OpenBSD's `SHA256.sig`).
    func carriesItsSignature(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = String(decoding: (try? handle.read(upToCount: 64)) ?? Data(), as: UTF8.self)
        switch rule.kind {
        case .gpg: return head.hasPrefix("-----BEGIN PGP SIGNED MESSAGE-----")
        case .signify: return head.hasPrefix("untrusted comment:")
        case .minisign, .ssh: return false
        }
    }

    /// Checks the file at `path` with the detached `signature` (nil for a clear-signed file).
    package func verify(fileAt path: String, signature: Data?) async -> Result<Verified, SignatureProblem> {
        if let signature, signature.isEmpty { return .failure(.unavailable("the signature file is empty")) }
        switch rule.kind {
        case .minisign(let key):
            guard let signature else { return .failure(.unavailable("no signature")) }
            return MinisignSignature.parse(String(decoding: signature, as: UTF8.self)).flatMap { parsed in
                parsed.verify({ prehashed in prehashed ? try BLAKE2b.digest(ofFileAt: path) : try Self.contents(path) }, key: key)
            }.map { Verified(signer: $0) }
        case .signify(let key):
            let bytes: [UInt8]
            do { bytes = try Self.contents(path) } catch { return .failure(.unreadable("\(error)")) }
            guard let signature else {
                // Embedded: the signature's two lines, then the message they sign.
                let (signature, message) = SignifySignature.split(embedded: bytes)
                return SignifySignature.parse(String(decoding: signature, as: UTF8.self)).flatMap { $0.verify(message, key: key) }
                    .map { Verified(signer: $0, signedText: String(decoding: message, as: UTF8.self)) }
            }
            return SignifySignature.parse(String(decoding: signature, as: UTF8.self)).flatMap { $0.verify(bytes, key: key) }
                .map { Verified(signer: $0) }
        case .gpg(let keyring, let fingerprints):
            return await gpg(path, signature: signature, keyring: keyring, fingerprints: fingerprints)
        case .ssh(let signers, let identity, let namespace):
            guard let signature else { return .failure(.unavailable("no signature")) }
            return await ssh(path, signature: signature, signers: signers, identity: identity, namespace: namespace)
        }
    }

    /// `gpgv --status-fd 1` in a throwaway home: the detached signature checked against the file,
    /// or a clear-signed file checked and its signed text written out (`--output`).
    private func gpg(_ path: String, signature: Data?, keyring: String, fingerprints: [String]) async -> Result<Verified, SignatureProblem> {
        await withScratch { scratch in
            var command = ["gpgv", "--homedir", scratch, "--status-fd", "1", "--keyring", keyring]
            let signed = scratch + "/signed.txt"
            if let signature {
                let file = scratch + "/signature.asc"
                guard FileManager.default.createFile(atPath: file, contents: signature) else { return .failure(.unreadable("cannot write \(file)")) }
                command += [file, path]
            } else {
                command += ["--output", signed, path]
            }
            let ended = await ChildProcess.run(command, timeout: timeout, outputLimit: 1 << 20)
            if let problem = Self.toolProblem(ended, "gpgv", package: "gpgv") { return .failure(problem) }
            let status = String(decoding: ended.stdout ?? Data(), as: UTF8.self)
            return GPGStatus.decide(status, fingerprints: fingerprints).flatMap { signer in
                guard signature == nil else { return .success(Verified(signer: signer)) }
                guard let text = FileManager.default.contents(atPath: signed) else {
                    return .failure(.unreadable("gpgv wrote no signed text"))
                }
                return .success(Verified(signer: signer, signedText: String(decoding: text, as: UTF8.self)))
            }
        }
    }

    /// `ssh-keygen -Y verify` with the file on stdin; its exit status decides.
    private func ssh(_ path: String, signature: Data, signers: String, identity: String, namespace: String) async -> Result<Verified, SignatureProblem> {
        await withScratch { scratch in
            let file = scratch + "/signature.sig"
            guard FileManager.default.createFile(atPath: file, contents: signature) else { return .failure(.unreadable("cannot write \(file)")) }
            guard String(decoding: signature.prefix(64), as: UTF8.self).hasPrefix("-----BEGIN SSH SIGNATURE-----") else {
                return .failure(.malformed("not an SSH signature (no BEGIN SSH SIGNATURE armour)"))
            }
            let ended = await ChildProcess.run(["ssh-keygen", "-Y", "verify", "-f", signers, "-I", identity, "-n", namespace, "-s", file],
                                               timeout: timeout, input: path, outputLimit: 1 << 20)
            if ended.exitCode == 0 { return .success(Verified(signer: Signer(kind: "ssh", identity: identity))) }
            if let problem = Self.toolProblem(ended, "ssh-keygen", package: "openssh-client") { return .failure(problem) }
            return .failure(.invalid("ssh-keygen: \(ended.lastErrorLine ?? "the signature did not verify") (identity \(identity), namespace \(namespace))"))
        }
    }

    /// A tool that could not be started, was killed or timed out; nil when it ran to its end.
    private static func toolProblem(_ ended: ChildProcess.Ended, _ tool: String, package: String) -> SignatureProblem? {
        if ended.notStarted != nil { return .unreadable("\(tool) is not installed (Debian: apt install \(package))") }
        if ended.timedOut { return .unreadable("\(tool) did not finish in time") }
        if ended.exitCode == nil { return .unreadable("\(tool) ended by signal \(ended.signal ?? 0)") }
        return nil
    }

    /// Runs `body` with a private temporary directory, removed after.
    private func withScratch(_ body: (String) async -> Result<Verified, SignatureProblem>) async -> Result<Verified, SignatureProblem> {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-signature-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            return .failure(.unreadable("cannot make a temporary directory: \(error)"))
        }
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        return await body(scratch)
    }

    /// The whole file, for a signature over its bytes (bounded: ``inMemoryLimit``).
    private static func contents(_ path: String) throws -> [UInt8] {
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= inMemoryLimit else {
            throw BatchFetchError(.ioError, "\(size) bytes is too large to check a signature over in memory")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw BatchFetchError(.ioError, "cannot read \(path)") }
        return Array(data)
    }
}
