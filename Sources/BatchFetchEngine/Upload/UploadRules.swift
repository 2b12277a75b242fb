import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// The decisions of an upload, apart from any I/O (tested without sockets in `UploadRulesTests`):
/// what a response to the upload means, whether the target already holds the file, and whether
/// the response contradicts what was sent.
enum UploadRules {
    /// What to do after one upload request.
    enum Verdict: Equatable {
        /// The target took the file (2xx, or a 303 pointing at the result).
        case accepted
        /// Send the file again to this URL (301, 302, 307, 308; the redirect policy allowed it).
        case redirect(URL)
        /// Worth another attempt after the retry policy's wait.
        case retry(BatchFetchError, retryAfter: Double?)
        case fail(BatchFetchError)

        /// The failure the attempt ends with, for its record; nil when the target took the file
        /// or redirected it.
        var failure: BatchFetchError? {
            switch self {
            case .accepted, .redirect: return nil
            case .retry(let failure, _), .fail(let failure): return failure
            }
        }
    }

    /// The verdict on an upload's response `head` (nil when none came) and the transport's
    /// `failure`. `bodyStarted`: the transport asked for the body, so the request reached the
    /// server. A `POST` is retried only when it provably did not (the connection was never
    /// made), unless `retryPost`; a `PUT` is idempotent and retried like a download.
    static func verdict(head: TransportResponseHead?, failure: TransportFailure?, bodyStarted: Bool, method: Job.Method,
                        retryPost: Bool, snippet: String, redirect: (Int, String?) -> RedirectPolicy.Decision) -> Verdict {
        let retryable = method == .put || retryPost
        if let head {
            let status = head.status
            let detail = snippet.isEmpty ? "" : ": \(snippet)"
            switch status {
            case 303:
                return .accepted
            case 301, 302, 307, 308:
                switch redirect(status, head.header("location")) {
                case .follow(let target): return .redirect(target)
                case .refuse(let failure): return .fail(failure)
                }
            default:
                break
            }
            switch AttemptVerdict(status: status, retryAfter: head.header("retry-after"), subject: "") {
            case .success:
                return .accepted
            case .retry(let failure, let retryAfter):
                guard retryable else {
                    return .fail(BatchFetchError(.httpStatus, "HTTP \(status)\(detail) (a POST is not retried unless 'retry_post: true')"))
                }
                return .retry(BatchFetchError(failure.code, failure.message + detail), retryAfter: retryAfter)
            case let verdict:
                let failure = verdict.failure ?? BatchFetchError(.httpStatus, "HTTP \(status)")
                return .fail(BatchFetchError(failure.code, failure.message + detail))
            }
        }
        let ended = failure.map { AttemptVerdict($0, subject: "") } ?? .retry(BatchFetchError(.connection, "no response"), retryAfter: nil)
        switch ended {
        case .retry(let reason, _):
            return retryable || !bodyStarted ? .retry(reason, retryAfter: nil) : .fail(Self.mayHaveReached(reason))
        case .interrupted:
            return .fail(BatchFetchError(.interrupted, "the run was interrupted"))
        case let verdict:
            return .fail(verdict.failure!)
        }
    }

    /// A POST that failed after the transport asked for its body: it may have reached the
    /// server, so it is not sent again.
    private static func mayHaveReached(_ reason: BatchFetchError) -> BatchFetchError {
        BatchFetchError(reason.code, "\(reason.message); the POST may have reached the server, so it is not "
            + "sent again (set 'retry_post: true' if the endpoint takes repeats)")
    }

    /// What the file to send is: its size and digests (sha256 always, md5 with `content_md5`).
    struct Source: Equatable {
        var size: Int64
        var sha256: String
        var md5: String?
    }

    /// Why the target already holds `source`, or nil when the evidence is not enough. Counted:
    /// a `HEAD` answered 2xx with the same `Content-Length`, and one of
    /// - a `Repr-Digest` or `Content-Digest` sha-256 equal to the file's;
    /// - a strong ETag equal to the one recorded after this job's last upload of this same file
    ///   to this same URL (the state cache; the file's identity and sha256 unchanged since);
    /// - with `content_md5`, an ETag that is the file's MD5 (S3's ETag of a single-part object).
    /// A size alone, a weak ETag or Last-Modified never count.
    static func alreadyThere(_ observation: MirrorObservation, source: Source, recordedETag: String?) -> String? {
        guard case .answered = observation.outcome, observation.size == source.size else { return nil }
        if let sha256 = observation.sha256 {
            return sha256 == source.sha256 ? "the target's digest is the file's sha256" : nil
        }
        guard let etag = observation.etag, !etag.hasPrefix("W/") else { return nil }
        if let recordedETag, etag == recordedETag { return "the target's ETag is the one recorded after uploading this file" }
        if let md5 = source.md5, etag == "\"\(md5)\"" { return "the target's ETag is the file's MD5" }
        return nil
    }

    /// Why a `POST` is up to date: an API endpoint has nothing to ask with `HEAD`, so the only
    /// evidence is the state cache's record that an earlier run posted this very file (same
    /// identity on disk, same sha256) to this URL and was answered 2xx. `refresh: always` posts
    /// on every run.
    static let postedBefore = "an earlier run posted this file (unchanged since) to this URL and was answered 2xx"

    /// A mismatch between what was sent and what the target says it stored: a `Repr-Digest`
    /// sha-256 other than the file's, or (with `content_md5`) an MD5-shaped ETag other than the
    /// file's MD5. A `Content-Digest` describes the response's own content, not the file.
    static func contradiction(_ head: TransportResponseHead, source: Source) -> BatchFetchError? {
        if let echoed = MirrorProbe.sha256(head.header("repr-digest")), echoed != source.sha256 {
            return BatchFetchError(.checksumMismatch, "the target stored sha256 \(echoed), not the file's \(source.sha256)")
        }
        if let md5 = source.md5, let etag = head.header("etag"), let stored = Self.md5ETag(etag), stored != md5 {
            return BatchFetchError(.checksumMismatch, "the target's ETag says MD5 \(stored), not the file's \(md5)")
        }
        return nil
    }

    /// Whether the answer confirms what was stored: a `Repr-Digest` equal to the file's sha256,
    /// or (with `content_md5`) an MD5-shaped ETag equal to the file's MD5. The report says so with
    /// `checksum_verified: true` (an upload without an echo leaves it out).
    static func confirms(_ head: TransportResponseHead, source: UploadRules.Source) -> Bool {
        if let echoed = MirrorProbe.sha256(head.header("repr-digest")), echoed == source.sha256 { return true }
        if let md5 = source.md5, let etag = head.header("etag"), Self.md5ETag(etag) == md5 { return true }
        return false
    }

    /// The hex in an ETag of the form `"<32 hex digits>"` (an S3 single-part object's MD5).
    private static func md5ETag(_ etag: String) -> String? {
        let inner = etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 34 ? etag.dropFirst().dropLast() : ""
        let hex = inner.lowercased()
        return hex.count == 32 && hex.allSatisfy(\.isHexDigit) ? hex : nil
    }

    /// `Content-Digest: sha-256=:<base64>:` (RFC 9530) for a hex sha256.
    static func contentDigest(sha256 hex: String) -> String {
        "sha-256=:\(Data(hexBytes: hex).base64EncodedString()):"
    }

    /// `Content-MD5` (RFC 1864: base64 of the digest) for a hex MD5.
    static func contentMD5(_ hex: String) -> String {
        Data(hexBytes: hex).base64EncodedString()
    }

    /// The first line of an error response's body, printable and short, for the failure message
    /// (an S3 `<Code>SignatureDoesNotMatch</Code>`, an nginx `413 Request Entity Too Large`).
    static func snippet(_ body: Data) -> String {
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        let printable = text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : " " }
        let words = String(printable).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return words.count > 200 ? String(words.prefix(200)) + "…" : words
    }
}

extension Data {
    /// The bytes of a hex string (two digits per byte; a stray digit is ignored).
    init(hexBytes hex: String) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex {
            guard let value = character.hexDigitValue.map(UInt8.init) else { continue }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        self.init(bytes)
    }
}
