import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// A signed job's gate before its file is published or believed (Docs/Signatures.md): the
/// detached signature fetched with the job's own network rules — from `sig_url`, or the URL of
/// the mirror that served the file with the kind's suffix — then ``SignatureCheck``. A failure is
/// the job's `signature_invalid`, naming the source, the manifest's key and what failed.
struct SignatureGate: Sendable {
    let check: SignatureCheck

    init(rule: SignatureRule) {
        check = SignatureCheck(rule: rule)
    }

    /// Checks the file at `path` with the signature of the first of `mirrors` (their indices)
    /// that serves one — the mirror that served the file, or every mirror for a file already on
    /// disk; `probe` fetches it. A signature that is served and fails ends the search.
    func verify(fileAt path: String, mirrors: [Int], probe: MirrorProbe) async -> Result<SignatureCheck.Verified, BatchFetchError> {
        if check.carriesItsSignature(path) {
            return await check.verify(fileAt: path, signature: nil).mapError { failure($0, source: nil) }
        }
        var last = failure(.unavailable("no mirror to fetch it from"), source: nil)
        for mirror in mirrors {
            guard let url = signatureURL(mirror: mirror, probe: probe) else { continue }
            let shown = probe.network.redactor.redact(url.absoluteString)
            switch await probe.fetch(mirror: mirror, limit: SignatureCheck.signatureLimit, url: url) {
            case .failure(let fetchFailure):
                last = failure(.unavailable(fetchFailure.message), source: shown)
            case .success(let signature):
                return await check.verify(fileAt: path, signature: signature).mapError { failure($0, source: shown) }
            }
        }
        return .failure(last)
    }

    /// `sig_url`, or mirror `mirror`'s URL with the kind's suffix added to its path.
    private func signatureURL(mirror: Int, probe: MirrorProbe) -> URL? {
        if let sigURL = check.rule.sigURL { return URL(string: sigURL.resolved) }
        guard probe.network.mirrors.indices.contains(mirror), let base = probe.network.mirrors[mirror]?.url,
              var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return nil }
        components.percentEncodedPath += check.rule.defaultSuffix
        return components.url
    }

    private func failure(_ problem: SignatureProblem, source: String?) -> BatchFetchError {
        let from = source.map { " (signature \($0))" } ?? ""
        return BatchFetchError(.signatureInvalid, "signature invalid: \(problem.message)\(from); the manifest names \(check.rule.keyDescription)")
    }
}
