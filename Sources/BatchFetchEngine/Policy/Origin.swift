import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// Scheme, host and port of a URL (RFC 6454): what "the same server" means when deciding where
/// credentials may go. Default ports are made explicit, so `https://h/` and `https://h:443/`
/// are one origin and `http://h/` another.
struct Origin: Hashable, Sendable {
    var scheme: String
    var host: String
    var port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        self.scheme = scheme
        self.host = host
        port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}
