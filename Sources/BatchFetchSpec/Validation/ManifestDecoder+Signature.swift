import Foundation

/// `signature:` and `sig_url:` of a download job (Docs/Signatures.md): one of `minisign`,
/// `signify`, `gpg`, `ssh`. Key files are relative to the manifest and must exist and parse now,
/// so a typo is found by `validate`, not by a run that then trusts nothing.
extension ManifestDecoder {
    static let signatureKinds = ["minisign", "signify", "gpg", "ssh"]

    mutating func decodeSignature(_ fields: Fields, isUpload: Bool, context: ProblemContext) -> SignatureRule? {
        guard let entry = fields["signature"] else {
            if let sigURL = fields["sig_url"] {
                problems.error("\(context)'sig_url' needs a 'signature' to check", at: sigURL.keyLocation)
            }
            return nil
        }
        if isUpload {
            problems.error("\(context)'signature' does not apply to an upload job: it checks a downloaded file", at: entry.keyLocation)
            return nil
        }
        let jobContext = context
        let context = context.appending("signature: ")
        guard let mapping = entry.value.mapping else {
            problems.error("\(context)must be a mapping with one of \(Self.signatureKinds.joined(separator: ", ")), found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return nil
        }
        checkKeys(mapping, allowed: Self.signatureKinds, context: context)
        let kinds = mapping.filter { Self.signatureKinds.contains($0.key) }
        guard kinds.count == 1, let chosen = kinds.first else {
            problems.error("\(context)needs exactly one of \(Self.signatureKinds.joined(separator: ", ")), found "
                + (kinds.isEmpty ? "none" : kinds.map(\.key).joined(separator: " and ")), at: entry.value.location)
            return nil
        }
        let kindContext = context.appending("\(chosen.key): ")
        guard let settings = chosen.value.mapping else {
            problems.error("\(kindContext)must be a mapping, found \(chosen.value.kindDescription)", at: chosen.value.location)
            return nil
        }
        let values = Fields(settings)
        var kind: SignatureRule.Kind?
        switch chosen.key {
        case "minisign":
            checkKeys(settings, allowed: ["public_key", "key_file"], context: kindContext)
            kind = ed25519Key(values, inline: "public_key", at: chosen.value.location, context: kindContext).map { .minisign($0) }
        case "signify":
            checkKeys(settings, allowed: ["key_file"], context: kindContext)
            kind = ed25519Key(values, inline: nil, at: chosen.value.location, context: kindContext).map { .signify($0) }
        case "gpg":
            checkKeys(settings, allowed: ["keyring", "fingerprints"], context: kindContext)
            let keyring = required(values, "keyring", at: chosen.value.location, context: kindContext)
                .flatMap { existingFile($0, context: kindContext) }
            var fingerprints: [String] = []
            if let entry = values["fingerprints"] {
                for (text, location) in stringList(entry, context: kindContext) {
                    let digits = text.uppercased().filter { !$0.isWhitespace }
                    if [40, 64].contains(digits.count), digits.allSatisfy(\.isHexDigit) {
                        fingerprints.append(digits)
                    } else {
                        problems.error("\(kindContext)'fingerprints': '\(text)' is not a key fingerprint (40 hex digits)", at: location)
                    }
                }
            }
            if let keyring, let entry = values["keyring"], Self.isArmoured(keyring) {
                // gpgv reads binary keyrings only; an armoured one reads as "no public key".
                problems.error("\(kindContext)'keyring': '\(entry.value.scalar?.value ?? keyring)' is an ASCII-armoured key, and gpgv reads binary keyrings: "
                    + "gpg --dearmor it (or write it with gpg --export, without --armor)", at: entry.value.location)
            }
            kind = keyring.map { .gpg(keyring: $0, fingerprints: fingerprints) }
        default:
            checkKeys(settings, allowed: ["allowed_signers", "identity", "namespace"], context: kindContext)
            let signers = required(values, "allowed_signers", at: chosen.value.location, context: kindContext)
                .flatMap { existingFile($0, context: kindContext) }
            let identity = required(values, "identity", at: chosen.value.location, context: kindContext)
                .flatMap { string($0, context: kindContext) }
            let namespace = values["namespace"].map { string($0, context: kindContext) } ?? "file"
            if let signers, let identity, let namespace {
                kind = .ssh(allowedSigners: signers, identity: identity, namespace: namespace)
            }
        }
        var sigURL: TemplatedString?
        if let entry = fields["sig_url"], let url = templated(entry, context: jobContext) {
            if let problem = Self.urlProblem(url) {
                problems.error("\(jobContext)'sig_url': \(problem)", at: entry.value.location)
            } else {
                sigURL = url
            }
        }
        return kind.map { SignatureRule(kind: $0, sigURL: sigURL) }
    }

    /// The key of a minisign or signify rule: `inline` (minisign's `public_key`) or `key_file`.
    private mutating func ed25519Key(_ values: Fields, inline: String?, at location: SourceLocation,
                                     context: ProblemContext) -> Ed25519Key? {
        let given = ([inline, "key_file"].compactMap { $0 }).filter { values[$0] != nil }
        guard given.count == 1, let key = given.first, let entry = values[key] else {
            let names = ([inline, "key_file"].compactMap { $0 }).map { "'\($0)'" }.joined(separator: " or ")
            problems.error("\(context)needs \(given.isEmpty ? "" : "only one of ")\(names)", at: location)
            return nil
        }
        let text: String
        if key == "key_file" {
            guard let path = existingFile(entry, context: context),
                  let contents = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            text = contents
        } else {
            guard let value = string(entry, context: context) else { return nil }
            text = value
        }
        switch Ed25519Key.parse(text) {
        case .success(let parsed): return parsed
        case .failure(let problem):
            problems.error("\(context)'\(key)': not a public key: \(problem.message)", at: entry.value.location)
            return nil
        }
    }

    mutating func required(_ values: Fields, _ key: String, at location: SourceLocation,
                                   context: ProblemContext) -> YAMLMappingEntry? {
        if let entry = values[key] { return entry }
        problems.error("\(context)needs '\(key)'", at: location)
        return nil
    }

    /// Whether the file at `path` begins as an ASCII-armoured OpenPGP block.
    private static func isArmoured(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return String(decoding: (try? handle.read(upToCount: 64)) ?? Data(), as: UTF8.self).hasPrefix("-----BEGIN PGP")
    }

    /// The absolute path a file setting names (relative to the manifest's directory); a problem
    /// at its value when no regular file is there (the path is still given, for the checks that
    /// pair settings).
    mutating func existingFile(_ entry: YAMLMappingEntry, context: ProblemContext) -> String? {
        guard let text = templated(entry, context: context)?.resolved else { return nil }
        let absolute = URL(fileURLWithPath: text, relativeTo: URL(fileURLWithPath: baseDirectory, isDirectory: true))
            .standardizedFileURL.path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) || isDirectory.boolValue {
            let relative = text.hasPrefix("/") ? "" : " (relative to the manifest's directory)"
            problems.error("\(context)'\(entry.key)': no file at '\(text)'\(relative)", at: entry.value.location)
        }
        return absolute
    }
}
