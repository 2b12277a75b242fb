import Foundation

/// The transport handler of one request: decides on the response head (through the state
/// machine, synchronously, so no body byte arrives before we know where it goes), feeds body
/// bytes to the sink, watches for idleness, and reports how the request ended.
final class AttemptHandler: TransportResponseHandler, @unchecked Sendable {
    /// How the request ended, for the downloader.
    struct Outcome {
        /// The machine's decision on the head; nil when no head arrived.
        var headAction: DownloadStateMachine.Action?
        var failure: TransportFailure?
        var overflow: Bool
        var received: Int64
    }

    private let lock = NSLock()
    private let decide: @Sendable (TransportResponseHead) -> DownloadStateMachine.Action
    private let begin: @Sendable (BodyPlan) -> Void
    private let sink: FileSink
    private let progress: JobProgress?
    /// Below this many remaining body bytes the transfer is left to finish rather than cancelled.
    private let finishWithin: Int64
    private var task: (any TransportTask)?
    private var headAction: DownloadStateMachine.Action?
    private var accepting = false
    private var overflow = false
    private var timedOut = false
    private var received: Int64 = 0
    private var lastActivity = DispatchTime.now()
    private var continuation: CheckedContinuation<Outcome, Never>?
    private var outcome: Outcome?

    init(sink: FileSink, finishWithin: Int64, progress: JobProgress? = nil,
         decide: @escaping @Sendable (TransportResponseHead) -> DownloadStateMachine.Action,
         begin: @escaping @Sendable (BodyPlan) -> Void) {
        self.sink = sink
        self.progress = progress
        self.finishWithin = finishWithin
        self.decide = decide
        self.begin = begin
    }

    func attach(_ task: any TransportTask) {
        lock.withLock { self.task = task }
    }

    func didReceiveHead(_ head: TransportResponseHead) -> Bool {
        let action = decide(head)
        let accept: Bool
        if case .receive(let plan) = action {
            begin(plan)
            accept = true
        } else {
            accept = false
        }
        lock.withLock {
            headAction = action
            accepting = accept
            lastActivity = .now()
        }
        return accept
    }

    /// With backpressure nothing is cancelled: a full sink holds the transport's reads until it
    /// has written half its cap.
    func didReceiveBody(_ data: Data, ready: @escaping @Sendable () -> Void) {
        guard let result = append(data) else { return ready() }
        switch result {
        case .accepted:
            ready()
        case .pause:
            sink.whenUnwritten(atMost: sink.resumeLimit) { [self] in
                // Waiting for our own disk is not the server's silence.
                lock.withLock { lastActivity = .now() }
                ready()
            }
        case .stop:
            let task = lock.withLock { () -> (any TransportTask)? in
                accepting = false
                return self.task
            }
            if let task, sink.writeFailure != nil || sink.bodyTooLong { task.cancel() }
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
            guard allowsShedding else { return }
            let (first, task) = lock.withLock { () -> (Bool, (any TransportTask)?) in
                defer { overflow = true }
                return (!overflow, self.task)
            }
            if first, let task { cancelOffQueue(task) }
        case .stop?:
            let task = lock.withLock { () -> (any TransportTask)? in
                accepting = false
                overflow = !sink.bodyTooLong && sink.writeFailure == nil
                return self.task
            }
            // Near its end a transfer is left to finish (its bytes are dropped) rather than risk
            // the cancel-versus-completion trap in FoundationNetworking.
            if let task, allowsShedding || sink.writeFailure != nil || sink.bodyTooLong { cancelOffQueue(task) }
        }
    }

    /// Counts a body part and hands it to the sink; nil when the body is not being accepted.
    private func append(_ data: Data) -> FileSink.AppendResult? {
        let accepting = lock.withLock {
            received += Int64(data.count)
            lastActivity = .now()
            return self.accepting
        }
        guard accepting else { return nil }
        let result = sink.append(data)
        if result != .stop { progress?.received(data.count) }
        return result
    }

    /// Cancels the transfer for an interrupted run, unless its body is within 1 MiB of its end
    /// (then it finishes: see ``allowsShedding`` on the cancel-versus-completion trap). The bytes
    /// written so far are kept.
    func interrupt() {
        let (task, started): ((any TransportTask)?, Bool) = lock.withLock { (outcome == nil ? self.task : nil, headAction != nil) }
        guard let task else { return }
        if !started || (sink.remainingBodyBytes.map { $0 > 1 << 20 } ?? true) { cancelOffQueue(task) }
    }

    var allowsShedding: Bool {
        sink.remainingBodyBytes.map { $0 > finishWithin } ?? true
    }

    /// Cancelling from the delegate queue took effect only after libcurl had queued most of the
    /// file (a gigabyte of backlog in the 1 GiB benchmark); from another thread it stops within
    /// milliseconds.
    private func cancelOffQueue(_ task: any TransportTask) {
        DispatchQueue.global().async { task.cancel() }
    }

    func didComplete(_ failure: TransportFailure?) {
        lock.lock()
        // Cancellations we asked for are not failures of the transfer.
        var reported = failure
        if timedOut {
            reported = .timedOut
        } else if failure == .overloaded {
            overflow = accepting || overflow
            reported = overflow ? nil : .connection("transfer shed by the transport")
        } else if failure == nil && overflow && !sink.bodyTooLong {
            // The body ended before the pause took effect: nothing is missing.
            overflow = false
        } else if failure == .cancelled && (overflow || sink.bodyTooLong || sink.writeFailure != nil || (headAction != nil && !isReceive(headAction!))) {
            reported = nil
        }
        let result = Outcome(headAction: headAction, failure: reported, overflow: overflow, received: received)
        outcome = result
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(returning: result)
    }

    private func isReceive(_ action: DownloadStateMachine.Action) -> Bool {
        if case .receive = action { return true }
        return false
    }

    /// Waits for the request to end, cancelling it when no bytes arrive for `idleTimeout` seconds
    /// or the deadline passes.
    func finished(idleTimeout: Double, deadline: DispatchTime?) async -> Outcome {
        let watchdog = Task { [self] in
            let interval = UInt64(min(1.0, idleTimeout / 4) * 1_000_000_000)
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: interval)
                let now = DispatchTime.now()
                let expired: (any TransportTask)? = lock.withLock {
                    let idle = now.seconds(since: lastActivity)
                    guard outcome == nil, idle > idleTimeout || (deadline.map { now >= $0 } ?? false) else { return nil }
                    timedOut = true
                    return task
                }
                if let expired {
                    expired.cancel()
                    return
                }
            }
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            lock.lock()
            if let outcome {
                lock.unlock()
                continuation.resume(returning: outcome)
            } else {
                self.continuation = continuation
                lock.unlock()
            }
        }
        watchdog.cancel()
        return result
    }
}
