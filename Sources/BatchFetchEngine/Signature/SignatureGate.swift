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
    let job: Job

    init(rule: SignatureRule, job: Job) {
        check = SignatureCheck(rule: rule)
        self.job = job
    }

    /// Checks the file at `path`, served by mirror `mirror` (`probe` fetches the signature).
    func verify(fileAt path: String, mirror: Int, probe: MirrorProbe) async -> Result<SignatureCheck.Verified, BatchFetchError> {
        if check.isClearSigned(path) {
            return await check.verify(fileAt: path, signature: nil).mapError { failure($0, source: nil) }
        }
        guard let url = signatureURL(mirror: mirror, probe: probe) else {
            return .failure(failure(.unavailable("no signature URL for mirror \(mirror)"), source: nil))
        }
        let shown = probe.network.redactor.redact(url.absoluteString)
        switch await probe.fetch(mirror: mirror, limit: SignatureCheck.signatureLimit, url: url) {
        case .failure(let fetchFailure):
            return .failure(failure(.unavailable(fetchFailure.message), source: shown))
        case .success(let signature):
            return await check.verify(fileAt: path, signature: signature).mapError { failure($0, source: shown) }
        }
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
