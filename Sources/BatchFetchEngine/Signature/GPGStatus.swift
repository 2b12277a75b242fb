import BatchFetchSpec

/// What `gpgv --status-fd`'s lines say of a file's OpenPGP signatures, decided without `gpgv`'s
/// exit code (Docs/Signatures.md): that counts a good signature by an expired or revoked key as
/// good, and one unknown key among several signatures as a failure.
///
/// Each signature begins with `NEWSIG`. One is good when it has `GOODSIG` and `VALIDSIG` and,
/// when the manifest names `fingerprints`, `VALIDSIG`'s signing-key or primary-key fingerprint is
/// one of them. Any `BADSIG` fails the file (it was changed after signing); otherwise a good
/// signature passes it, and without one the most telling reason fails it: an expired or revoked
/// key (`EXPKEYSIG`, `REVKEYSIG`), an expired signature (`EXPSIG`), a key the keyring lacks
/// (`NO_PUBKEY`, `ERRSIG`), a key not among `fingerprints`, or no signature at all (`NODATA`).
package enum GPGStatus {
    package static func decide(_ output: String, fingerprints: [String]) -> Result<Signer, SignatureProblem> {
        struct One {
            var good = false
            var fingerprint: String?
            var primary: String?
            var problem: SignatureProblem?
        }
        var signatures: [One] = []
        var noData = false
        for line in output.split(whereSeparator: \.isNewline) {
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2, words[0] == "[GNUPG:]" else { continue }
            let keyword = words[1], argument = words.count > 2 ? words[2] : ""
            if keyword == "NEWSIG" || signatures.isEmpty && ["GOODSIG", "BADSIG", "ERRSIG", "EXPKEYSIG", "REVKEYSIG", "EXPSIG"].contains(keyword) {
                signatures.append(One())
            }
            switch keyword {
            case "GOODSIG": signatures[signatures.count - 1].good = true
            case "VALIDSIG":
                signatures[signatures.count - 1].fingerprint = argument
                signatures[signatures.count - 1].primary = words.count > 11 ? words[11] : argument
            case "BADSIG": return .failure(.invalid("the OpenPGP signature by key \(argument) does not match the file"))
            case "EXPKEYSIG": signatures[signatures.count - 1].problem = .invalid("signed by key \(argument), which has expired")
            case "REVKEYSIG": signatures[signatures.count - 1].problem = .invalid("signed by key \(argument), which was revoked")
            case "EXPSIG": signatures[signatures.count - 1].problem = .invalid("the signature by key \(argument) has expired")
            case "ERRSIG", "NO_PUBKEY":
                if !signatures.isEmpty, signatures[signatures.count - 1].problem == nil {
                    signatures[signatures.count - 1].problem = .wrongKey("signed by key \(argument), which the keyring does not hold")
                }
            case "NODATA": noData = true
            default: break
            }
        }
        var notListed: String?
        for signature in signatures where signature.good && signature.problem == nil {
            guard let fingerprint = signature.fingerprint else { continue }
            let primary = signature.primary ?? fingerprint
            if fingerprints.isEmpty || fingerprints.contains(where: { SignatureRule.sameFingerprint($0, fingerprint) || SignatureRule.sameFingerprint($0, primary) }) {
                return .success(Signer(kind: "gpg", fingerprint: primary))
            }
            notListed = primary
        }
        if let problem = signatures.compactMap(\.problem).first { return .failure(problem) }
        if let notListed { return .failure(.wrongKey("signed by key \(notListed), which is not among the manifest's fingerprints")) }
        if noData || signatures.isEmpty { return .failure(.malformed("no OpenPGP signature found")) }
        return .failure(.invalid("no good OpenPGP signature"))
    }
}
