import BatchFetchNetwork
import Foundation

/// A run in progress (``Runner/start()``): its events as they happen, a switch to interrupt it,
/// and the final report.
///
/// ```swift
/// let run = Runner(manifest: manifest).start()
/// for await event in run.events {
///     if case .jobFinished(let job) = event { print(job.id, job.status) }
/// }
/// let report = await run.report
/// ```
public final class RunHandle: Sendable {
    /// Every event of the run, ending after `runFinished`. Unread events are buffered (the
    /// newest 4,096), so a caller that only wants the report may ignore them.
    public let events: AsyncStream<RunEvent>
    /// The executor the run's scheduler runs on (nil: the cooperative pool). A consumer of
    /// ``events`` that prefers it (`withTaskExecutorPreference`) is resumed by each event on the
    /// same thread instead of waking another: two switches a job fewer in a batch of small files.
    /// It is an event loop: only a consumer that never waits long per event (on a pipe's reader,
    /// say) may prefer it, or the loop's transfers stall.
    public let executor: (any TaskExecutor)?
    private let task: Task<RunReport, Never>
    private let interruption: Interruption

    init(events: AsyncStream<RunEvent>, executor: (any TaskExecutor)?, task: Task<RunReport, Never>,
         interruption: Interruption) {
        self.events = events
        self.executor = executor
        self.task = task
        self.interruption = interruption
    }

    /// The report, once the run has finished (and written nothing: see ``RunReport/write(to:)``).
    public var report: RunReport {
        get async { await task.value }
    }

    /// Stops the run: no new jobs start, transfers in flight are cancelled (their partials and
    /// sidecars stay for a rerun), and the report says `interrupted`.
    public func interrupt() {
        interruption.interrupt()
    }
}
