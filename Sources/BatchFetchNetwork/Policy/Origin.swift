import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// Scheme, host and port of a URL (RFC 6454): what "the same server" means when deciding where
/// credentials may go. Default ports are made explicit, so `https://h/` and `https://h:443/`
/// are one origin and `http://h/` another.
package struct Origin: Hashable, Sendable {
    package var scheme: String
    package var host: String
    package var port: Int

    package init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        self.scheme = scheme
        self.host = host
        port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}
