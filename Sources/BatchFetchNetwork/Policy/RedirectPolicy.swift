import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// Which redirects a request follows, for every command (run, pin, check, check --deep): a pure
/// rule, tested without sockets (`RedirectPolicyTests`).
///
/// Followed: a 301, 302, 303, 307 or 308 whose `Location` (absolute or relative) names an http or
/// https URL with a host, at most ``maxRedirects`` times. Refused with `redirect_refused` and not
/// retried: any other scheme (`ftp:`, `file:`, `http+unix:`, `data:` …) and, unless
/// `allow_insecure_redirect`, https to http. A target's userinfo and fragment are dropped: the
/// server does not get to choose credentials, and ``CredentialPolicy`` decides what each request
/// carries. Messages show targets through the job's ``Redactor``, since a server may echo a
/// secret back in its `Location` (Docs/Contracts.md §3).
package struct RedirectPolicy: Sendable, Equatable {
    package var maxRedirects = 10
    package var allowInsecure = false
    package var redactor = Redactor()

    package init(maxRedirects: Int = 10, allowInsecure: Bool = false, redactor: Redactor = Redactor()) {
        self.maxRedirects = maxRedirects
        self.allowInsecure = allowInsecure
        self.redactor = redactor
    }

    package enum Decision: Sendable, Equatable {
        /// Ask this URL next (no userinfo, no fragment).
        case follow(URL)
        /// Not followed; the mirror failed with this.
        case refuse(BatchFetchError)
    }

    /// The decision on a redirect response with status `status` and `Location` header `location`
    /// to a request for `current`, after `followed` redirects of this request. `bucketRegion`
    /// is S3's `x-amz-bucket-region`: its `301 PermanentRedirect` to a bucket of another region
    /// has no `Location`; at AWS it is followed to that region's endpoint (where the request is
    /// signed for that region, ``JobNetwork``), elsewhere the failure says which region to set.
    package func decide(status: Int, location: String?, from current: URL, followed: Int, bucketRegion: String? = nil) -> Decision {
        let from = shown(current)
        if location?.isEmpty ?? true, let region = bucketRegion, !region.isEmpty {
            if followed < maxRedirects, let moved = AWSConfiguration.regional(current, region: region) { return .follow(moved) }
            return .refuse(BatchFetchError(.httpStatus, "HTTP \(status) from \(from): the bucket is in the region \(region); "
                + "set it (s3: {region: \(region)} or AWS_REGION)"))
        }
        guard let location, !location.isEmpty,
              let resolved = URL(string: URLSyntax.encodingInvalidCharacters(location), relativeTo: current)?.absoluteURL,
              var components = URLComponents(url: resolved, resolvingAgainstBaseURL: false) else {
            return .refuse(BatchFetchError(.httpStatus, "HTTP \(status) without a usable Location from \(from)"))
        }
        components.user = nil
        components.password = nil
        components.fragment = nil
        guard let target = components.url else {
            return .refuse(BatchFetchError(.httpStatus, "HTTP \(status) without a usable Location from \(from)"))
        }
        let to = shown(target)
        guard followed < maxRedirects else {
            return .refuse(BatchFetchError(.tooManyRedirects, "more than \(maxRedirects) redirects, the last from \(from)"))
        }
        let scheme = target.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https" else {
            return .refuse(BatchFetchError(
                .redirectRefused, "refusing redirect from \(from) to \(to): only http and https targets are followed"))
        }
        guard let host = target.host, !host.isEmpty else {
            return .refuse(BatchFetchError(.redirectRefused, "refusing redirect from \(from) to \(to): the target has no host"))
        }
        if current.scheme?.lowercased() == "https", scheme == "http", !allowInsecure {
            return .refuse(BatchFetchError(
                .redirectRefused, "refusing redirect from https to \(to) (set allow_insecure_redirect to allow)"))
        }
        return .follow(target)
    }

    /// A URL as it may be printed.
    private func shown(_ url: URL) -> String {
        redactor.redact(url.absoluteString)
    }
}
