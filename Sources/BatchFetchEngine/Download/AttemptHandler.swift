import BatchFetchFiles
import BatchFetchNetwork
import Foundation
import NIOConcurrencyHelpers

/// A decision on a response head: whether its body is to be received.
protocol HeadDecision: Sendable {
    var acceptsBody: Bool { get }
}

/// The transport handler of one request that writes its body to a ``FileSink``: decides on the
/// response head synchronously (so no body byte arrives before we know where it goes), feeds
/// body bytes to the sink, stops the transfer when the sink cannot keep up, and reports how the
/// request ended. The rules live in the pure ``AttemptState``; this class only carries them out.
final class AttemptHandler<Decision: HeadDecision>: WatchedHandler, Sendable {
    /// How the request ended.
    struct Outcome: Sendable {
        /// The decision on the head; nil when no head arrived.
        var decision: Decision?
        /// How the transfer ended, reconciled with what we asked for (``AttemptState/end(_:expired:tooLong:writeFailed:)``).
        var failure: TransportFailure?
        var overflow: Bool
        var received: Int64
    }

    let watch = RequestWatch<Outcome>()
    private let decide: @Sendable (TransportResponseHead) -> Decision
    private let sink: FileSink
    private let progress: JobProgress?
    /// Below this many remaining body bytes the transfer is left to finish rather than cancelled.
    private let finishWithin: Int64
    private let state = NIOLockedValueBox((attempt: AttemptState(), decision: Decision?.none))

    /// `decide` runs on the transport's queue when the head arrives; when it accepts the body it
    /// must have made the sink ready for it.
    init(sink: FileSink, finishWithin: Int64, progress: JobProgress? = nil,
         decide: @escaping @Sendable (TransportResponseHead) -> Decision) {
        self.sink = sink
        self.progress = progress
        self.finishWithin = finishWithin
        self.decide = decide
    }

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        let decision = decide(head)
        state.withLockedValue {
            $0.decision = decision
            $0.attempt.head(accepted: decision.acceptsBody)
        }
        watch.touch()
        return decision.acceptsBody
    }

    /// With backpressure nothing is cancelled: a full sink holds the transport's reads until it
    /// has written half its cap.
    func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) {
        guard let result = append(data) else { return ready() }
        switch result {
        case .accepted:
            ready()
        case .pause:
            sink.whenUnwritten(atMost: sink.resumeLimit) { [watch] in
                // Waiting for our own disk is not the server's silence.
                watch.touch()
                ready()
            }
        case .stop:
            if sink.reachedCutEnd { return endAtCut(ready) }
            state.withLockedValue { $0.attempt.stop(sinkFull: false) }
            if sink.writeFailure != nil || sink.bodyTooLong { watch.attachedTask?.cancel() }
            ready()
        }
    }

    /// Without backpressure a full sink can only stop the transfer (a pause: cancel, drain,
    /// resume with a range) — done once, and only far from the body's end.
    func didReceiveBody(_ data: Data) {
        switch append(data) {
        case nil, .accepted?:
            return
        case .pause?:
            // Keep accepting what is already on its way; stop the transfer once, unless it is
            // about to end anyway (the sink holds up to twice its cap).
            guard allowsShedding, state.withLockedValue({ $0.attempt.shed() }) else { return }
            cancelOffQueue()
        case .stop? where sink.reachedCutEnd:
            endAtCut()
        case .stop?:
            let failed = sink.bodyTooLong || sink.writeFailure != nil
            state.withLockedValue { $0.attempt.stop(sinkFull: !failed) }
            // Near its end a transfer is left to finish (its bytes are dropped) rather than risk
            // the cancel-versus-completion trap in FoundationNetworking.
            if allowsShedding || failed { cancelOffQueue() }
        }
    }

    /// The range was cut short (another connection took its rest) and its body reached the cut:
    /// the rest is not wanted, and the transfer is ended as an interrupt ends one — at once, or
    /// near its end after a grace (the cancel-versus-completion trap). A shed, not a failure.
    private func endAtCut(_ ready: (@Sendable () -> Void)? = nil) {
        let first = state.withLockedValue { state -> Bool in
            defer { state.attempt.stop(sinkFull: true) }
            return state.attempt.phase != .stopped
        }
        if first { interrupt() }
        ready?()
    }

    /// Counts a body part and hands it to the sink; nil when the body is not being accepted.
    private func append(_ data: Data) -> FileSink.AppendResult? {
        watch.touch()
        guard state.withLockedValue({ $0.attempt.body(data.count) }) else { return nil }
        let result = sink.append(data)
        if result != .stop { progress?.received(data.count) }
        return result
    }

    /// Cancels the transfer for an interrupted run. One whose body is within 1 MiB of its end
    /// gets ``finishGrace`` to finish (see ``allowsShedding`` on the cancel-versus-completion
    /// trap) and is cancelled if it has not: a transfer stalled in its last MiB held the exit
    /// for the whole idle timeout. A transfer whose transport has not reported its end
    /// ``abandonAfter`` later is ended here: FoundationNetworking was seen to lose the end of a
    /// cancelled range request stalled by its server (its socket source spinning), which held
    /// the exit forever. The bytes written so far are kept.
    func interrupt() {
        guard let task = watch.runningTask else { return }
        let started = state.withLockedValue { $0.decision != nil }
        if !started || (sink.remainingBodyBytes.map { $0 > 1 << 20 } ?? true) {
            cancelOffQueue(task)
        } else {
            watch.cancel(unlessEndedWithin: Self.finishGrace)
        }
        watch.abandon(after: Self.abandonAfter) { [weak self] in self?.didComplete(.cancelled) }
    }

    /// How long an interrupted transfer within its last MiB may take to finish, and how long an
    /// interrupted transfer's end may take to arrive: both well inside the second
    /// Docs/Contracts.md gives a signal to end a run.
    static var finishGrace: Duration { .milliseconds(250) }
    static var abandonAfter: Duration { .milliseconds(600) }

    var allowsShedding: Bool {
        sink.remainingBodyBytes.map { $0 > finishWithin } ?? true
    }

    /// Cancelling from the delegate queue took effect only after libcurl had queued most of the
    /// file (a gigabyte of backlog in the 1 GiB benchmark); from another thread it stops within
    /// milliseconds.
    private func cancelOffQueue(_ task: (any TransportTask)? = nil) {
        guard let task = task ?? watch.attachedTask else { return }
        DispatchQueue.global().async { task.cancel() }
    }

    func didComplete(_ failure: TransportFailure?) {
        let tooLong = sink.bodyTooLong, writeFailed = sink.writeFailure != nil
        watch.complete { expired in
            state.withLockedValue { state in
                let (reported, overflow) = state.attempt.end(failure, expired: expired, tooLong: tooLong, writeFailed: writeFailed)
                return Outcome(decision: state.decision, failure: reported, overflow: overflow, received: state.attempt.received)
            }
        }
    }
}

extension AttemptHandler.Outcome {
    /// How an accepted body ended, once the sink has drained: the sink's own failures first
    /// (they are not the server's), then what the transport said.
    func bodyEnd(sink: FileSink) -> DownloadStateMachine.BodyOutcome {
        if let failure = sink.writeFailure { return .diskError(failure) }
        if sink.bodyTooLong { return .tooLong }
        if overflow { return .overflow }
        if let failure { return .failed(failure) }
        return .complete
    }
}
