import Foundation

/// The jobs in flight and their progress, shared by the scheduler and the progress ticker.
final class ActiveJobs: @unchecked Sendable {
    private let lock = NSLock()
    private let jobs: Int
    private let started: DispatchTime
    private var active: [Int: (id: String, progress: JobProgress, started: DispatchTime)] = [:]
    private var finished = 0
    private var finishedTransferred: Int64 = 0

    init(jobs: Int, started: DispatchTime) {
        self.jobs = jobs
        self.started = started
    }

    func add(_ index: Int, id: String, progress: JobProgress) {
        lock.withLock { active[index] = (id, progress, .now()) }
    }

    func remove(_ index: Int, transferred: Int64) {
        lock.withLock {
            active[index] = nil
            finishedTransferred += transferred
        }
    }

    /// A job finished (ran, or was skipped).
    func completed() {
        lock.withLock { finished += 1 }
    }

    /// The run's progress now, or nil when no job is in flight.
    func snapshot() -> RunProgress? {
        lock.withLock {
            guard !active.isEmpty else { return nil }
            let now = DispatchTime.now()
            let entries = active.sorted { $0.key < $1.key }.map { _, entry -> RunProgress.Active in
                let (bytes, total, transferred) = entry.progress.snapshot
                return RunProgress.Active(id: entry.id, bytes: bytes, total: total, transferred: transferred,
                                          elapsed: now.seconds(since: entry.started))
            }
            return RunProgress(elapsed: now.seconds(since: started), jobs: jobs, finished: finished, active: entries,
                               transferred: finishedTransferred + entries.reduce(0) { $0 + $1.transferred })
        }
    }
}
