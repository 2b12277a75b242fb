import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec

extension JobResult {
    /// The result with every text that may quote a URL or a server's words passed through
    /// `redactor`: the served URL, redirects, attempts, messages, validators, mirror verdicts.
    /// Applied once where a job's result is made (run, check), so the report, events, JUnit
    /// and stderr all print the same hidden form (Docs/Contracts.md §2).
    func redacted(by redactor: Redactor) -> JobResult {
        var result = self
        result.url = url.map(redactor.redact)
        result.redirects = redirects.map(redactor.redact)
        result.etag = etag.map(redactor.redact)
        result.lastModified = lastModified.map(redactor.redact)
        result.failure = failure?.redacted(by: redactor)
        result.attempts = attempts.map { attempt in
            var attempt = attempt
            attempt.url = redactor.redact(attempt.url)
            attempt.failure = attempt.failure?.redacted(by: redactor)
            return attempt
        }
        result.mirrors = mirrors?.map { mirror in
            var mirror = mirror
            mirror.url = redactor.redact(mirror.url)
            mirror.message = mirror.message.map(redactor.redact)
            mirror.etag = mirror.etag.map(redactor.redact)
            mirror.lastModified = mirror.lastModified.map(redactor.redact)
            return mirror
        }
        return result
    }
}

extension BatchFetchError {
    func redacted(by redactor: Redactor) -> BatchFetchError {
        BatchFetchError(code, redactor.redact(message))
    }
}
