import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// The proxy environment that curl, wget and URLSession (libcurl) honour, for the nio transport:
/// `http_proxy`, `https_proxy` (also upper case; `all_proxy` as a fallback) and `no_proxy`
/// (a comma list of hosts, `.domain` or `domain` suffixes, or `*`).
package struct ProxySettings: Sendable, Equatable {
    package struct Proxy: Sendable, Hashable {
        package var host: String
        package var port: Int
        /// `user:password` from the proxy URL, for Basic authorization.
        package var credentials: String?
    }

    package var http: Proxy?
    package var https: Proxy?
    package var exclusions: [String]

    package init(environment: [String: String]) {
        func value(_ name: String) -> String? {
            (environment[name] ?? environment[name.uppercased()]).flatMap { $0.isEmpty ? nil : $0 }
        }
        let all = value("all_proxy")
        http = (value("http_proxy") ?? all).flatMap(Self.parse)
        https = (value("https_proxy") ?? all).flatMap(Self.parse)
        exclusions = (value("no_proxy") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// The proxy for a request to `url`, or nil to connect directly.
    package func proxy(for url: URL) -> Proxy? {
        guard let host = url.host?.lowercased() else { return nil }
        let proxy = url.scheme?.lowercased() == "https" ? https : http
        guard let proxy else { return nil }
        for rule in exclusions {
            if rule == "*" { return nil }
            let domain = rule.hasPrefix(".") ? String(rule.dropFirst()) : rule
            let bare = domain.split(separator: ":").first.map(String.init) ?? domain
            if host == bare || host.hasSuffix("." + bare) { return nil }
        }
        return proxy
    }

    /// `http://[user:pass@]host[:port]` (a scheme-less `host:port` as curl accepts it).
    package static func parse(_ text: String) -> Proxy? {
        let url = URL(string: text.contains("://") ? text : "http://" + text)
        guard let url, let host = url.host, !host.isEmpty else { return nil }
        let credentials = url.user.map { user in url.password.map { "\(user):\($0)" } ?? user }
        // Without a port curl uses 1080, and so do we.
        return Proxy(host: host, port: url.port ?? 1080, credentials: credentials?.removingPercentEncoding ?? credentials)
    }
}
