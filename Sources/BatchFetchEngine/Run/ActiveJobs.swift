import Foundation
import NIOConcurrencyHelpers

/// The jobs in flight and their progress, shared by the scheduler and the progress ticker.
final class ActiveJobs: Sendable {
    private struct State {
        var active: [Int: (id: String, progress: JobProgress, started: DispatchTime)] = [:]
        var finished = 0
        var finishedTransferred: Int64 = 0
    }

    private let jobs: Int
    private let started: DispatchTime
    private let state = NIOLockedValueBox(State())

    init(jobs: Int, started: DispatchTime) {
        self.jobs = jobs
        self.started = started
    }

    func add(_ index: Int, id: String, progress: JobProgress) {
        state.withLockedValue { $0.active[index] = (id, progress, .now()) }
    }

    func remove(_ index: Int, transferred: Int64) {
        state.withLockedValue {
            $0.active[index] = nil
            $0.finishedTransferred += transferred
        }
    }

    /// A job finished (ran, or was skipped).
    func completed() {
        state.withLockedValue { $0.finished += 1 }
    }

    /// The run's progress now, or nil when no job is in flight.
    func snapshot() -> RunProgress? {
        state.withLockedValue { state in
            guard !state.active.isEmpty else { return nil }
            let now = DispatchTime.now()
            let entries = state.active.sorted { $0.key < $1.key }.map { _, entry -> RunProgress.Active in
                let (bytes, total, transferred, unpacking) = entry.progress.snapshot
                return RunProgress.Active(id: entry.id, bytes: bytes, total: total, transferred: transferred,
                                          elapsed: now.seconds(since: entry.started), unpacking: unpacking)
            }
            return RunProgress(elapsed: now.seconds(since: started), jobs: jobs, finished: state.finished, active: entries,
                               transferred: state.finishedTransferred + entries.reduce(0) { $0 + $1.transferred })
        }
    }
}
