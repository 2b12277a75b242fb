import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOSSL

/// The TLS trust and client certificate a job's HTTPS requests use when they are not the
/// system's defaults: the job's `tls` settings, else the variables curl, OpenSSL and Python
/// honour — `CURL_CA_BUNDLE` or `SSL_CERT_FILE` (a PEM bundle replacing the system store) and
/// `SSL_CERT_DIR` (a hashed directory of CAs, added).
///
/// URLSession on Linux takes neither a CA bundle nor a client certificate (libcurl is given
/// its compiled-in bundle, and no TLS challenge reaches the delegate), so jobs that need one run
/// on the AsyncHTTPClient transport, configured from this value (``configuration()``).
package struct TLSOptions: Hashable, Sendable {
    package var caFile: String?
    package var caDirectory: String?
    package var clientCertificate: String?
    package var clientKey: String?

    /// nil when the settings and the environment leave everything to the system. A variable
    /// naming the system's own bundle or directory (as many images set `SSL_CERT_FILE`) changes
    /// nothing, so it does not move the job off the default transport.
    package init?(_ settings: TLSSettings, environment: [String: String]) {
        func variable(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else { return nil }
            return Self.systemLocations.contains(Self.realPath(value)) ? nil : value
        }
        caFile = settings.caFile ?? variable("CURL_CA_BUNDLE") ?? variable("SSL_CERT_FILE")
        caDirectory = settings.caFile == nil ? variable("SSL_CERT_DIR") : nil
        clientCertificate = settings.clientCertificate
        clientKey = settings.clientKey
        if caFile == nil, caDirectory == nil, clientCertificate == nil { return nil }
    }

    /// Where Linux distributions keep the system's CA bundle and directory, which libcurl (under
    /// URLSession) and NIOSSL read by default.
    package static let systemLocations: Set<String> = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
        "/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
        "/etc/ssl/certs", "/etc/pki/tls/certs",
    ].reduce(into: Set<String>()) { paths, path in
        paths.insert(path)
        paths.insert(realPath(path))
    }

    private static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// NIOSSL's client configuration; throws when a file cannot be loaded, with a message that
    /// names it.
    package func configuration() throws(TLSLoadError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            guard FileManager.default.isReadableFile(atPath: caFile) else { throw TLSLoadError("cannot read the CA bundle \(caFile)") }
            tls.trustRoots = .file(caFile)
            if let caDirectory { tls.additionalTrustRoots = [.file(caDirectory)] }
        } else if let caDirectory {
            tls.trustRoots = .file(caDirectory)
        }
        if let clientCertificate, let clientKey {
            do {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(clientCertificate).map { .certificate($0) }
            } catch {
                throw TLSLoadError("cannot load the client certificate \(clientCertificate): \(error)")
            }
            do {
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: clientKey, format: .pem))
            } catch {
                throw TLSLoadError("cannot load the client key \(clientKey): \(error)")
            }
        }
        return tls
    }
}

/// A TLS file that could not be loaded.
package struct TLSLoadError: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}
