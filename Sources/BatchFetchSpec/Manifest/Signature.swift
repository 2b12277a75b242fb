import Foundation

/// `signature:` of a checksum file's job (Docs/Signatures.md): whose key must have signed the
/// file before any digest in it is believed, and where the signature is.
package struct SignatureRule: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// minisign's format, legacy (`Ed`) and prehashed (`ED`) signatures.
        case minisign(Ed25519Key)
        /// OpenBSD signify's detached signature.
        case signify(Ed25519Key)
        /// A detached or clear-signed OpenPGP signature, checked by `gpgv` against `keyring`;
        /// with `fingerprints`, the signing key (primary or subkey) must be one of them.
        case gpg(keyring: String, fingerprints: [String])
        /// `ssh-keygen -Y verify` with an allowed-signers file, an identity and a namespace.
        case ssh(allowedSigners: String, identity: String, namespace: String)
    }

    package var kind: Kind
    /// `sig_url:`; nil: the file's own URL with ``defaultSuffix``.
    package var sigURL: TemplatedString?

    package init(kind: Kind, sigURL: TemplatedString? = nil) {
        self.kind = kind
        self.sigURL = sigURL
    }

    /// The kind's name as the manifest and the lock write it.
    package var name: String {
        switch kind {
        case .minisign: "minisign"
        case .signify: "signify"
        case .gpg: "gpg"
        case .ssh: "ssh"
        }
    }

    /// What `sig_url` defaults to after the file's URL: minisign's `.minisig`, signify's and
    /// SSH's `.sig`, GPG's `.asc`.
    package var defaultSuffix: String {
        switch kind {
        case .minisign: ".minisig"
        case .signify, .ssh: ".sig"
        case .gpg: ".asc"
        }
    }

    /// Whether a signer the lock recorded is one this rule accepts: the same key id or identity;
    /// for GPG one of `fingerprints`, or any when the rule names none (the keyring decides).
    package func accepts(_ signer: Signer) -> Bool {
        guard signer.kind == name else { return false }
        switch kind {
        case .minisign(let key): return signer.keyID == key.minisignID
        case .signify(let key): return signer.keyID == key.signifyID
        case .gpg(_, let fingerprints):
            return fingerprints.isEmpty || fingerprints.contains { Self.sameFingerprint($0, signer.fingerprint ?? "") }
        case .ssh(_, let identity, _): return signer.identity == identity
        }
    }

    /// Fingerprints compare as hex digits, case and spaces ignored.
    package static func sameFingerprint(_ a: String, _ b: String) -> Bool {
        func digits(_ text: String) -> String { text.uppercased().filter { !$0.isWhitespace } }
        return !a.isEmpty && digits(a) == digits(b)
    }

    /// The manifest's key as an error message names it.
    package var keyDescription: String {
        switch kind {
        case .minisign(let key): "minisign key \(key.minisignID)"
        case .signify(let key): "signify key \(key.signifyID)"
        case .gpg(let keyring, let fingerprints):
            fingerprints.isEmpty ? "a key of the GPG keyring \(keyring)" : "GPG key \(fingerprints.joined(separator: " or "))"
        case .ssh(_, let identity, let namespace): "SSH signer \(identity) (namespace \(namespace))"
        }
    }
}

/// Who signed a checksum file, as the lock (`signed_by`), the report (`checksums_signed_by`)
/// and the state store record it: the kind and one of the key id (minisign, signify), the
/// fingerprint (GPG) or the identity (SSH).
public struct Signer: Sendable, Equatable, Codable {
    public var kind: String
    public var keyID: String?
    public var fingerprint: String?
    public var identity: String?

    public init(kind: String, keyID: String? = nil, fingerprint: String? = nil, identity: String? = nil) {
        self.kind = kind
        self.keyID = keyID
        self.fingerprint = fingerprint
        self.identity = identity
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case keyID = "key_id"
        case fingerprint
        case identity
    }

    /// Its fields by their report names (sorted, they are what `JSONEncoder` writes).
    package var fields: [String: String] {
        var fields = ["kind": kind]
        fields["key_id"] = keyID
        fields["fingerprint"] = fingerprint
        fields["identity"] = identity
        return fields
    }

    /// As a message names it: `minisign key 0123…`, `gpg key <fingerprint>`, `ssh signer <identity>`.
    package var description: String {
        if let keyID { return "\(kind) key \(keyID)" }
        if let fingerprint { return "\(kind) key \(fingerprint)" }
        return "\(kind) signer \(identity ?? "?")"
    }
}

/// An Ed25519 public key as minisign and signify write it: the algorithm `Ed`, an 8-byte key
/// number and the 32-byte key, base64 on the line after an `untrusted comment:`.
package struct Ed25519Key: Sendable, Equatable {
    package var keyNumber: [UInt8]
    package var publicKey: [UInt8]

    /// The key id as `minisign` prints it: the key number as a little-endian integer, 16
    /// upper-case hex digits.
    package var minisignID: String { Self.hex(keyNumber.reversed()) }
    /// The key id as signify's bytes are in the file: 16 upper-case hex digits.
    package var signifyID: String { Self.hex(keyNumber) }

    package init(keyNumber: [UInt8], publicKey: [UInt8]) {
        self.keyNumber = keyNumber
        self.publicKey = publicKey
    }

    /// What is wrong with a key's text.
    package struct Malformed: Error, Equatable {
        package var message: String

        package init(message: String) {
            self.message = message
        }
    }

    /// A key from its base64 line (minisign's `public_key:` value) or from a key file's text
    /// (a comment line, then the base64 line); what is wrong otherwise.
    package static func parse(_ text: String) -> Result<Ed25519Key, Malformed> {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("untrusted comment:") }
        guard lines.count == 1 else { return .failure(Malformed(message: "expected one base64 key line, found \(lines.count)")) }
        guard let bytes = Data(base64Encoded: lines[0]).map(Array.init) else { return .failure(Malformed(message: "the key is not base64")) }
        guard bytes.count == 42 else { return .failure(Malformed(message: "a key is 42 bytes, this one \(bytes.count)")) }
        guard bytes[0] == 0x45, bytes[1] == 0x64 else { return .failure(Malformed(message: "not an Ed25519 key (algorithm 'Ed')")) }
        return .success(Ed25519Key(keyNumber: Array(bytes[2..<10]), publicKey: Array(bytes[10..<42])))
    }

    /// The key as minisign's `public_key:` line writes it.
    package var base64: String {
        Data([0x45, 0x64] + keyNumber + publicKey).base64EncodedString()
    }

    package static func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        bytes.map { String(format: "%02X", $0) }.joined()
    }
}
