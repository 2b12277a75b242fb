import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// Where an `s3://` or `gs://` URL is asked and how it is signed, found the way the AWS CLI
/// finds it (Docs/ObjectStores.md): the job's `s3:` settings first, then the environment
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_PROFILE`,
/// `AWS_REGION`, `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`), then the
/// profile in the shared files (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`,
/// `AWS_CONFIG_FILE` or `~/.aws/config`). A profile named in the manifest wins over credentials
/// in the environment, as `--profile` does for the CLI. `gs://` goes to Google Cloud Storage's
/// XML API, signed with the HMAC keys `GS_ACCESS_KEY_ID`/`GS_SECRET_ACCESS_KEY` when they are
/// set, else anonymous.
package struct AWSConfiguration: Sendable, Equatable {
    /// Nil: requests go unsigned.
    package var signer: SigV4Signer?
    package var region: String
    /// A custom endpoint (scheme, host, port), if any.
    package var endpoint: URL?
    package var pathStyle: Bool

    package static let defaultRegion = "us-east-1"
    package static let googleEndpoint = URL(string: "https://storage.googleapis.com")!

    /// The configuration of `scheme` ("s3" or "gs") for a job's settings.
    package static func resolve(scheme: String, settings: S3Settings, environment: [String: String]) -> AWSConfiguration {
        let key = CacheKey(scheme: scheme, settings: settings,
                           environment: environment.filter { $0.key.hasPrefix("AWS_") || $0.key.hasPrefix("GS_") || $0.key == "HOME" })
        if let known = cache.withLockedValue({ $0[key] }) { return known }
        let resolved = scheme == "gs" ? google(settings, environment) : amazon(settings, environment)
        cache.withLockedValue { $0[key] = resolved }
        return resolved
    }

    /// Jobs share their settings: the files are read once per process for each.
    private struct CacheKey: Hashable {
        var scheme: String
        var settings: S3Settings
        var environment: [String: String]
    }

    private static let cache = NIOLockedValueBox([CacheKey: AWSConfiguration]())

    private static func amazon(_ settings: S3Settings, _ environment: [String: String]) -> AWSConfiguration {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let profileName = settings.profile ?? environment["AWS_PROFILE"] ?? "default"
        let credentialsFile = SharedFile(path: environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home + "/.aws/credentials")
        let configFile = SharedFile(path: environment["AWS_CONFIG_FILE"] ?? home + "/.aws/config")
        let config = configFile.section(profileName == "default" ? "default" : "profile " + profileName)
            ?? configFile.section(profileName) ?? [:]
        let stored = credentialsFile.section(profileName) ?? [:]
        func fromFiles(_ name: String) -> String? { stored[name] ?? config[name] }

        var credentials: SigV4Signer.Credentials?
        if settings.profile == nil, let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"],
           !id.isEmpty, !secret.isEmpty {
            credentials = .init(accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        } else if let id = fromFiles("aws_access_key_id"), let secret = fromFiles("aws_secret_access_key") {
            credentials = .init(accessKeyID: id, secretAccessKey: secret, sessionToken: fromFiles("aws_session_token"))
        }
        let region = settings.region ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? config["region"] ?? defaultRegion
        let endpointText = settings.endpoint ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"] ?? config["endpoint_url"]
        let endpoint = endpointText.flatMap { URL(string: $0) }
        let signer = settings.anonymous ? nil : credentials.map { SigV4Signer(credentials: $0, region: region) }
        return AWSConfiguration(signer: signer, region: region, endpoint: endpoint, pathStyle: settings.pathStyle ?? (endpoint != nil))
    }

    private static func google(_ settings: S3Settings, _ environment: [String: String]) -> AWSConfiguration {
        var signer: SigV4Signer?
        if !settings.anonymous, let id = environment["GS_ACCESS_KEY_ID"], let secret = environment["GS_SECRET_ACCESS_KEY"] {
            signer = SigV4Signer(credentials: .init(accessKeyID: id, secretAccessKey: secret), region: settings.region ?? "auto")
        }
        let endpoint = settings.endpoint.flatMap { URL(string: $0) } ?? googleEndpoint
        return AWSConfiguration(signer: signer, region: settings.region ?? "auto", endpoint: endpoint, pathStyle: settings.pathStyle ?? true)
    }

    /// The http(s) URL of `key` in `bucket`: `endpoint/bucket/key` (path style) or
    /// `bucket.endpoint/key`; AWS's regional endpoint without a custom one; `query` pairs after
    /// it. Key and query are encoded as SigV4 encodes them, so what goes on the wire is what
    /// was signed.
    package func url(bucket: String, key: String, query: [(String, String)] = []) -> URL? {
        let path = SigV4Signer.encode(key, keepSlash: true)
        guard let base = endpoint.flatMap({ URLComponents(url: $0, resolvingAgainstBaseURL: false) })
                ?? URLComponents(string: "https://s3.\(region).amazonaws.com") else { return nil }
        var components = base
        let prefix = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        if pathStyle {
            components.percentEncodedPath = prefix + "/" + SigV4Signer.encode(bucket, keepSlash: false) + "/" + path
        } else {
            components.host = bucket + "." + (components.host ?? "")
            components.percentEncodedPath = prefix + "/" + path
        }
        if !query.isEmpty {
            components.percentEncodedQuery = query.map { SigV4Signer.encode($0.0, keepSlash: false) + "=" + SigV4Signer.encode($0.1, keepSlash: false) }
                .joined(separator: "&")
        }
        return components.url
    }

    /// AWS's S3 endpoint `host` as the bucket's part (empty for path style) and its region:
    /// `<bucket>.s3.<region>.amazonaws.com`, `s3.<region>.amazonaws.com`, or the regionless
    /// `…s3.amazonaws.com` (us-east-1). Nil for any other host.
    package static func awsEndpoint(_ host: String) -> (bucket: String, region: String)? {
        let suffix = ".amazonaws.com"
        guard host.lowercased().hasSuffix(suffix) else { return nil }
        let labels = host.lowercased().dropLast(suffix.count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let s3 = labels.lastIndex(of: "s3"), labels.count - s3 <= 2 else { return nil }
        let region = labels.count - s3 == 2 ? labels[s3 + 1] : defaultRegion
        return (labels[..<s3].joined(separator: "."), region)
    }

    /// The URL S3 means by a `301` naming `region` (`x-amz-bucket-region`) for a request to `url`
    /// at AWS: the same bucket and key at that region's endpoint. Nil away from AWS.
    package static func regional(_ url: URL, region: String) -> URL? {
        guard let host = url.host, let endpoint = awsEndpoint(host), endpoint.region != region,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.host = (endpoint.bucket.isEmpty ? "" : endpoint.bucket + ".") + "s3.\(region).amazonaws.com"
        return components.url
    }

    /// An INI file of the AWS CLI's (`[section]`, `name = value`, `#` and `;` comments); empty
    /// when it is missing or unreadable.
    package struct SharedFile {
        private var sections: [String: [String: String]] = [:]

        package init(path: String) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
            var current: String?
            for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
                if line.hasPrefix("["), line.hasSuffix("]") {
                    let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                    current = name
                    if sections[name] == nil { sections[name] = [:] }
                } else if let current, let equals = line.firstIndex(of: "=") {
                    let name = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                    let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                    sections[current]?[name] = value
                }
            }
        }

        package func section(_ name: String) -> [String: String]? { sections[name] }
    }
}
