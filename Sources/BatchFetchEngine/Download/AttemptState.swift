import BatchFetchNetwork

/// One request's life as the download sees it, as a pure value: whether its body is wanted, how
/// much arrived, whether the transfer was shed for a disk that fell behind — and, when the
/// transport reports the end, what that end means (``end(_:expired:tooLong:writeFailed:)``).
/// ``AttemptHandler`` keeps one behind a lock and feeds it the transport's events; the rules
/// are tested without sockets (`AttemptStateTests`).
struct AttemptState: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// No response head yet.
        case awaitingHead
        /// The head was accepted: body bytes go to the sink.
        case receiving
        /// The head was decided without its body (a redirect, an error status, a refused range).
        case declined
        /// The sink takes no more of this body (full, past the body's end, or a write failed).
        case stopped
    }

    private(set) var phase = Phase.awaitingHead
    /// The transfer was stopped (or is being stopped) to let the disk catch up; the rest comes
    /// in a range.
    private(set) var overflow = false
    /// Body bytes that arrived, wanted or not.
    private(set) var received: Int64 = 0

    mutating func head(accepted: Bool) {
        assert(phase == .awaitingHead, "a second response head")
        phase = accepted ? .receiving : .declined
    }

    /// Counts body bytes; true when they go to the sink.
    mutating func body(_ count: Int) -> Bool {
        received += Int64(count)
        return phase == .receiving
    }

    /// The sink passed its cap on a transport without backpressure: true the first time, when
    /// the transfer is to be cancelled.
    mutating func shed() -> Bool {
        defer { overflow = true }
        return !overflow
    }

    /// The sink takes no more; `sinkFull` when only its buffer is (a shed, not a failure).
    mutating func stop(sinkFull: Bool) {
        phase = .stopped
        overflow = sinkFull
    }

    /// What the transport's end `failure` means for the download: cancellations it asked for
    /// are not failures, a transfer the transport shed is an overflow, a watchdog's cancel is a
    /// timeout. `expired` says the watchdog cancelled it; `tooLong` and `writeFailed` are the
    /// sink's state.
    func end(_ failure: TransportFailure?, expired: Bool, tooLong: Bool, writeFailed: Bool)
        -> (failure: TransportFailure?, overflow: Bool) {
        if expired { return (.timedOut, overflow) }
        switch failure {
        case .overloaded?:
            // The transport dropped the transfer for its own backlog: for a body we were taking,
            // a pause like ours; otherwise a failure.
            let shed = phase == .receiving || overflow
            return (shed ? nil : .connection("transfer shed by the transport"), shed)
        case nil where overflow && !tooLong:
            // The body ended before the pause took effect: nothing is missing.
            return (nil, false)
        case .cancelled? where overflow || tooLong || writeFailed || phase == .declined:
            return (nil, overflow)
        default:
            return (failure, overflow)
        }
    }
}
