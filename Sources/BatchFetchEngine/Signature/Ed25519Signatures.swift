import BatchFetchSpec
import CSodium
import Crypto
import Foundation

/// A minisign signature file (Docs/Signatures.md): an untrusted comment, the base64 signature
/// (`Ed` signs the file, `ED` its BLAKE2b-512), the trusted comment, and the global signature
/// over the signature and the trusted comment together. Parsing and checking are pure: the
/// caller gives the file's bytes or their BLAKE2b-512.
package struct MinisignSignature: Sendable, Equatable {
    package var prehashed: Bool
    package var keyNumber: [UInt8]
    package var signature: [UInt8]
    package var trustedComment: String
    package var globalSignature: [UInt8]

    /// The signature in `text`, or what is malformed about it.
    package static func parse(_ text: String) -> Result<MinisignSignature, SignatureProblem> {
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline).map(String.init)
        guard lines.count >= 4, lines[0].hasPrefix("untrusted comment:"), lines[2].hasPrefix("trusted comment: ") else {
            return .failure(.malformed("not a minisign signature (expected 4 lines: untrusted comment, signature, trusted comment, global signature)"))
        }
        guard let bytes = Data(base64Encoded: lines[1]).map(Array.init), bytes.count == 74 else {
            return .failure(.malformed("the signature line is not 74 base64-encoded bytes"))
        }
        let algorithm = String(decoding: bytes[0..<2], as: UTF8.self)
        guard algorithm == "Ed" || algorithm == "ED" else { return .failure(.malformed("unknown algorithm '\(algorithm)'")) }
        guard let global = Data(base64Encoded: lines[3]).map(Array.init), global.count == 64 else {
            return .failure(.malformed("the global signature is not 64 base64-encoded bytes"))
        }
        return .success(MinisignSignature(prehashed: algorithm == "ED", keyNumber: Array(bytes[2..<10]), signature: Array(bytes[10..<74]),
                                          trustedComment: String(lines[2].dropFirst("trusted comment: ".count)),
                                          globalSignature: global))
    }

    /// Checks the signature by `key` of a message given as its bytes (legacy) or its
    /// BLAKE2b-512 (prehashed, ``message`` decides which it asks for), then the trusted comment.
    package func verify(_ message: (_ prehashed: Bool) throws -> [UInt8], key: Ed25519Key) -> Result<Signer, SignatureProblem> {
        guard keyNumber == key.keyNumber else {
            return .failure(.wrongKey("signed by minisign key \(Ed25519Key.hex(keyNumber.reversed())), not \(key.minisignID)"))
        }
        guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key.publicKey) else {
            return .failure(.malformed("the public key is not an Ed25519 key"))
        }
        let bytes: [UInt8]
        do { bytes = try message(prehashed) } catch { return .failure(.unreadable("\(error)")) }
        guard publicKey.isValidSignature(signature, for: bytes) else {
            return .failure(.invalid("the signature does not match the file"))
        }
        guard publicKey.isValidSignature(globalSignature, for: signature + Array(trustedComment.utf8)) else {
            return .failure(.invalid("the trusted comment's global signature does not match (the comment was changed)"))
        }
        return .success(Signer(kind: "minisign", keyID: key.minisignID))
    }
}

/// An OpenBSD signify signature: an untrusted comment and the base64 `Ed`, key number and
/// signature of the whole file.
package struct SignifySignature: Sendable, Equatable {
    package var keyNumber: [UInt8]
    package var signature: [UInt8]

    package static func parse(_ text: String) -> Result<SignifySignature, SignatureProblem> {
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline).map(String.init)
        guard lines.count >= 2, lines[0].hasPrefix("untrusted comment:") else {
            return .failure(.malformed("not a signify signature (expected an untrusted comment and a signature line)"))
        }
        guard let bytes = Data(base64Encoded: lines[1]).map(Array.init), bytes.count == 74, bytes[0] == 0x45, bytes[1] == 0x64 else {
            return .failure(.malformed("the signature line is not an Ed25519 signature (74 base64-encoded bytes)"))
        }
        return .success(SignifySignature(keyNumber: Array(bytes[2..<10]), signature: Array(bytes[10..<74])))
    }

    /// An embedded signature file (`signify -S -e`) as its signature (the first two lines) and
    /// the message after them.
    package static func split(embedded bytes: [UInt8]) -> (signature: [UInt8], message: [UInt8]) {
        var newlines = 0
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            newlines += 1
            if newlines == 2 { return (Array(bytes[...index]), Array(bytes[(index + 1)...])) }
        }
        return (bytes, [])
    }

    package func verify(_ message: [UInt8], key: Ed25519Key) -> Result<Signer, SignatureProblem> {
        guard keyNumber == key.keyNumber else {
            return .failure(.wrongKey("signed by signify key \(Ed25519Key.hex(keyNumber)), not \(key.signifyID)"))
        }
        guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key.publicKey) else {
            return .failure(.malformed("the public key is not an Ed25519 key"))
        }
        guard publicKey.isValidSignature(signature, for: message) else {
            return .failure(.invalid("the signature does not match the file"))
        }
        return .success(Signer(kind: "signify", keyID: key.signifyID))
    }
}

/// Why a signature did not verify: the words after "signature invalid:" in a job's error.
package enum SignatureProblem: Error, Equatable, Sendable {
    /// The signature file is not one of its kind.
    case malformed(String)
    /// Made by another key than the manifest names.
    case wrongKey(String)
    /// The key's, but not of these bytes (or, for minisign, not of this trusted comment).
    case invalid(String)
    /// No signature to check: not served, empty, too large.
    case unavailable(String)
    /// The file or the key could not be read, or the checking tool failed.
    case unreadable(String)

    package var message: String {
        switch self {
        case .malformed(let text): "malformed signature: \(text)"
        case .wrongKey(let text): "wrong key: \(text)"
        case .invalid(let text): text
        case .unavailable(let text): "no signature: \(text)"
        case .unreadable(let text): text
        }
    }
}

/// BLAKE2b-512 of a file, streamed through libsodium's `crypto_generichash` in 1 MiB reads: what
/// minisign's prehashed signatures sign.
package enum BLAKE2b {
    /// libsodium's one-time set-up, before its first use.
    private static let initialised: Int32 = sodium_init()

    package static func digest(ofFileAt path: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw POSIXError(.ENOENT) }
        defer { try? handle.close() }
        _ = initialised
        // The state is 64-byte aligned, and Swift sees it only as an opaque pointer.
        let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { state.deallocate() }
        let opaque = OpaquePointer(state)
        crypto_generichash_init(opaque, nil, 0, 64)
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            chunk.withUnsafeBytes { buffer in
                _ = crypto_generichash_update(opaque, buffer.bindMemory(to: UInt8.self).baseAddress, UInt64(buffer.count))
            }
        }
        var out = [UInt8](repeating: 0, count: 64)
        crypto_generichash_final(opaque, &out, 64)
        return out
    }
}
