import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// What each request of a job carries, given where it goes: a pure rule shared by run, pin and
/// check, tested without sockets (`CredentialPolicyTests`).
///
/// Credentials go only to the origin (scheme, host, port) of the mirror they were given for, as
/// curl does since 7.58: after a redirect to another origin — another host, another port, or
/// https to http — `Authorization`, `Proxy-Authorization`, `Cookie` and every header whose value
/// came from the environment are dropped. A job that needs one of them to follow a redirect names
/// it in `cross_origin_headers`; even then it is never sent over http after https.
///
/// Basic credentials from the mirror URL's userinfo (`https://user:${PW}@host/…`) or, with
/// `netrc: true`, from `.netrc` become an `Authorization: Basic` header (unless the job sets its
/// own) on requests to the mirror's origin only, on both transports alike; the URL handed to a
/// transport never carries userinfo.
package struct CredentialPolicy: Sendable {
    /// Headers dropped on a change of origin, whatever their value.
    package static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The job's headers (values resolved) and whether each must stay with its origin.
    package var headers: [(name: String, value: String, private: Bool)]
    /// Lowercased names allowed across origins (`cross_origin_headers`).
    package var crossOrigin: Set<String>
    /// `.netrc` entries, when the job asked for them.
    package var netrc: Netrc?

    package init(headers: [(name: String, value: TemplatedString)], crossOrigin: [String], netrc: Netrc?) {
        self.headers = headers.map { header in
            (header.name, header.value.resolved,
             Self.credentialHeaders.contains(header.name.lowercased()) || !header.value.secrets.isEmpty)
        }
        self.crossOrigin = Set(crossOrigin.map { $0.lowercased() })
        self.netrc = netrc
    }

    /// The URL to ask (userinfo removed) and the headers to send, for a request to `target` made
    /// on behalf of the mirror `mirror` (the URL the manifest gave; nil when unknown, which is
    /// treated as another https origin).
    package func request(to target: URL, forMirror mirror: URL?) -> (url: URL, headers: [(name: String, value: String)]) {
        let origin = Origin(target)
        let sameOrigin = origin != nil && origin == mirror.flatMap(Origin.init)
        let downgrade = mirror?.scheme?.lowercased() != "http" && target.scheme?.lowercased() != "https"
        var sent: [(name: String, value: String)] = []
        for header in headers {
            let allowed = sameOrigin || !header.private || (crossOrigin.contains(header.name.lowercased()) && !downgrade)
            if allowed { sent.append((header.name, header.value)) }
        }
        if sameOrigin, let mirror, !sent.contains(where: { $0.name.lowercased() == "authorization" }),
           let (user, password) = basicCredentials(for: mirror) {
            sent.append(("Authorization", "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()))
        }
        return (Self.withoutUserinfo(target), sent)
    }

    /// The mirror URL's userinfo (percent-decoded), else its host's `.netrc` entry.
    private func basicCredentials(for mirror: URL) -> (String, String)? {
        // Parsed into components only when there is userinfo: a parse per request costs a
        // measurable share of a small-file batch (bench/results/profile.md, "Choices the code cites").
        if mirror.user(percentEncoded: true) != nil,
           let components = URLComponents(url: mirror, resolvingAgainstBaseURL: false), let user = components.percentEncodedUser {
            let password = components.percentEncodedPassword ?? ""
            return (user.removingPercentEncoding ?? user, password.removingPercentEncoding ?? password)
        }
        if let host = mirror.host, let entry = netrc?.credentials(forHost: host) {
            return (entry.login, entry.password)
        }
        return nil
    }

    package static func withoutUserinfo(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }
}
