import BatchFetchFiles

/// The attempts of one job against its mirrors, and the count of failures on the current mirror
/// that the retry policy weighs: the bookkeeping every driver of the attempt core keeps (a
/// download, a segmented transfer's ranges, a mirror probe, an upload), kept once.
///
/// An attempt is one try of the job against a mirror. Bounded ranges that continue a transfer
/// are not attempts: the driver says so with ``record(mirror:url:status:failure:continuing:)``'s
/// `continuing`, and their answers update the attempt they continue.
package struct AttemptLog: Sendable, Equatable {
    /// Every attempt, in order, as the report lists them.
    package private(set) var records: [AttemptRecord] = []
    /// Retryable failures on the current mirror (``retry(after:retryAfter:remaining:policy:)``).
    package private(set) var failures = 0
    /// Seconds waited before the next attempt, recorded with it.
    private var pendingWait = 0.0

    package init() {}

    /// Records the answer (or failure) of an attempt; with `continuing`, of the attempt the last
    /// record describes (a bounded range, a range asked again after the disk fell behind).
    package mutating func record(mirror: Int, url: String, status: Int?, failure: BatchFetchError?, continuing: Bool = false,
                                 piece: AttemptRecord.Piece? = nil) {
        if continuing, !records.isEmpty {
            records[records.count - 1].httpStatus = status ?? records[records.count - 1].httpStatus
            records[records.count - 1].failure = failure
            records[records.count - 1].url = url
            return
        }
        records.append(AttemptRecord(mirrorIndex: mirror, url: url, httpStatus: status, failure: failure, waited: pendingWait,
                                     piece: piece))
        pendingWait = 0
    }

    /// Adds records kept elsewhere (a segmented transfer's failed ranges).
    package mutating func append(contentsOf others: [AttemptRecord]) {
        records += others
    }

    /// The last attempt failed after all (its body broke off, its bytes did not verify), or a
    /// failure with no attempt of its own ends the job: one record either way.
    package mutating func amendLast(_ failure: BatchFetchError, mirror: Int, url: String) {
        if records.isEmpty {
            record(mirror: mirror, url: url, status: nil, failure: failure)
        } else {
            records[records.count - 1].failure = failure
        }
    }

    /// Counts a retryable failure on the current mirror and asks `policy` whether to wait and
    /// try again, or give the mirror up (retries used up, a `Retry-After` over the cap, a wait
    /// past the deadline `remaining` seconds away).
    package mutating func retry(after failure: BatchFetchError, retryAfter: Double?, remaining: Double?,
                        policy: RetryPolicy) -> RetryPolicy.Decision {
        failures += 1
        return policy.decide(after: failure, failures: failures, retryAfter: retryAfter, remaining: remaining)
    }

    /// Counts a failure without asking for a wait (content that keeps changing under a
    /// segmented transfer); true while retries are left.
    package mutating func countFailure(policy: RetryPolicy) -> Bool {
        failures += 1
        return failures <= policy.retries
    }

    /// The next mirror starts with no failures.
    package mutating func nextMirror() {
        failures = 0
    }

    /// The owner waited `seconds` before the next attempt; recorded with it.
    package mutating func waited(_ seconds: Double) {
        pendingWait = seconds
    }
}
