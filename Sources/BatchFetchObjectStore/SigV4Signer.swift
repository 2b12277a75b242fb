import Crypto
import Foundation

/// AWS Signature Version 4 for S3-compatible stores (Docs/ObjectStores.md): the headers that
/// authenticate one request — `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token`
/// with a session token, and `Authorization: AWS4-HMAC-SHA256 …` — computed from the request
/// alone, so it is pure and tested against AWS's published vectors and botocore's signatures
/// (`SigV4SignerTests`).
///
/// Hand-written because no AWS SDK for Swift is installable here (Soto is not in this machine's
/// package list): about a hundred lines on swift-crypto's SHA-256 and HMAC. Soto's `AWSSigner`
/// (soto-core) would replace it where that package can be had.
///
/// S3's rules, not the generic service's: the path is encoded once and never normalised, and
/// the payload is `UNSIGNED-PAYLOAD` unless the caller hashed the body. Signed headers are
/// `host` and the `x-amz-*` ones (those the signer adds and any the request carries):
/// `Range`, `If-Range` and the like stay unsigned, so a retry or a segment changes no
/// signature input but the date.
package struct SigV4Signer: Sendable, Equatable {
    package struct Credentials: Sendable, Equatable {
        package var accessKeyID: String
        package var secretAccessKey: String
        package var sessionToken: String?

        package init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    package var credentials: Credentials
    package var region: String
    package var service: String

    package static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// The sha256 of no bytes: a body-less request's payload hash outside S3.
    package static let emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    package init(credentials: Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request of `method` for `url`, signed at `date` together with
    /// `headers` (those of the request to sign besides `host`; ``signedHeaders(of:)`` picks them). `payloadHash` is the body's sha256 in hex, or ``unsignedPayload``.
    /// `contentHashHeader` adds `x-amz-content-sha256` (S3 requires it; the generic test
    /// suite's vectors have none).
    package func headers(method: String, url: URL, headers: [(name: String, value: String)] = [], payloadHash: String = unsignedPayload,
                        date: Date, contentHashHeader: Bool = true) -> [(name: String, value: String)] {
        let stamp = Self.timestamp(date)
        var added: [(name: String, value: String)] = [("x-amz-date", stamp)]
        if contentHashHeader { added.append(("x-amz-content-sha256", payloadHash)) }
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        var signed: [(name: String, value: String)] = [("host", Self.host(of: url))]
        for header in headers + added {
            signed.append((header.name.lowercased(), header.value.trimmingCharacters(in: .whitespaces)))
        }
        signed.sort { $0.name < $1.name }
        let signedNames = signed.map(\.name).joined(separator: ";")
        let canonical = [method, Self.canonicalPath(url), Self.canonicalQuery(url),
                         signed.map { "\($0.name):\($0.value)\n" }.joined(), signedNames, payloadHash].joined(separator: "\n")
        let day = String(stamp.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let toSign = ["AWS4-HMAC-SHA256", stamp, scope, Self.hex(SHA256.hash(data: Data(canonical.utf8)))].joined(separator: "\n")
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: signingKey(day: day)))
        added.append(("Authorization", "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
                      + "SignedHeaders=\(signedNames), Signature=\(signature)"))
        return added
    }

    /// The headers of a request that are signed: its `x-amz-*` ones.
    package static func signedHeaders(of headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        headers.filter { $0.name.lowercased().hasPrefix("x-amz-") }
    }

    /// The key of one day, region and service: HMACs chained from `AWS4` + the secret.
    package func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// `Host` as sent: the port only when it is not the scheme's default.
    package static func host(of url: URL) -> String {
        let host = (url.host ?? "").lowercased()
        guard let port = url.port else { return host }
        let standard = url.scheme?.lowercased() == "https" ? 443 : 80
        return port == standard ? host : "\(host):\(port)"
    }

    /// The path as S3 compares it: each byte but the unreserved ones and `/` percent-encoded,
    /// once, whatever encoding the URL had.
    package static func canonicalPath(_ url: URL) -> String {
        let path = url.path(percentEncoded: false)
        return path.isEmpty ? "/" : encode(path, keepSlash: true)
    }

    /// The query's pairs, each name and value encoded, sorted by name then value.
    package static func canonicalQuery(_ url: URL) -> String {
        guard let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems, !items.isEmpty else { return "" }
        let pairs: [(name: String, value: String)] = items.map { item in
            (encode(item.name, keepSlash: false), encode(item.value ?? "", keepSlash: false))
        }
        let sorted = pairs.sorted { left, right in left.name == right.name ? left.value < right.value : left.name < right.name }
        return sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// RFC 3986 encoding as SigV4 defines it: `A-Z a-z 0-9 - . _ ~` kept (and `/` in paths),
    /// every other UTF-8 byte as `%XX` in upper case.
    package static func encode(_ text: String, keepSlash: Bool) -> String {
        var encoded = ""
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if unreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    private static func unreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E  // - . _ ~
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    package static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
    }

    private static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
