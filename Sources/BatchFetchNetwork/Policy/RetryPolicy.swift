import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// When a failed request is tried again on the same mirror, and after how long, for every
/// command: a pure rule, tested without sockets (`RetryPolicyTests`).
///
/// Up to `retries` extra attempts per mirror, each after an exponential backoff with full jitter
/// (`backoff`, doubling, at most `backoff_max`), or after exactly the server's `Retry-After`.
/// A `Retry-After` longer than `retry_after_max`, or any wait (backoff or `Retry-After`) that could
/// end past the job's deadline, is not waited for: the mirror gives up at once with a message
/// that says why, and the next mirror is tried — a `503 Retry-After: 86400` must not hold a
/// nightly run and its lock for a day (Docs/Contracts.md §3). This is the engine's one rule for
/// waits and the deadline; downloads, segments and probes all ask it.
package struct RetryPolicy: Sendable, Equatable {
    package var retries: Int
    package var backoff: Double
    package var backoffMax: Double
    package var retryAfterMax: Double

    package init(retries: Int, backoff: Double, backoffMax: Double, retryAfterMax: Double = 300) {
        self.retries = retries
        self.backoff = backoff
        self.backoffMax = backoffMax
        self.retryAfterMax = retryAfterMax
    }

    package init(_ settings: JobSettings) {
        self.init(retries: settings.retries, backoff: settings.backoff, backoffMax: settings.backoffMax,
                  retryAfterMax: settings.retryAfterMax)
    }

    package enum Decision: Sendable, Equatable {
        case wait(RetryDelay)
        /// No further attempt on this mirror, for this reason.
        case giveUp(BatchFetchError)
    }

    /// What to do after `failure`, the `failures`-th on this mirror (1-based); `retryAfter` is the
    /// server's wait in seconds, `remaining` the seconds left before the job's deadline.
    package func decide(after failure: BatchFetchError, failures: Int, retryAfter: Double?, remaining: Double?) -> Decision {
        guard failures <= retries else { return .giveUp(failure) }
        guard let retryAfter else {
            let delay = RetryDelay.backoff(failure: failures, base: backoff, cap: backoffMax)
            if let remaining, delay.seconds > remaining {
                return .giveUp(BatchFetchError(.deadlineExceeded,
                    "\(failure.message); a retry after up to \(Self.seconds(delay.seconds)) could end past the job's deadline"))
            }
            return .wait(delay)
        }
        if retryAfter > retryAfterMax {
            return .giveUp(BatchFetchError(failure.code,
                "\(failure.message) asking to retry after \(Self.seconds(retryAfter)), longer than retry_after_max (\(Self.seconds(retryAfterMax)))"))
        }
        if let remaining, retryAfter > remaining {
            return .giveUp(BatchFetchError(.deadlineExceeded,
                "\(failure.message) asking to retry after \(Self.seconds(retryAfter)), past the job's deadline"))
        }
        return .wait(RetryDelay(seconds: max(0, retryAfter), jitter: false))
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e15 ? "\(Int(value))s" : String(format: "%.1fs", value)
    }
}
