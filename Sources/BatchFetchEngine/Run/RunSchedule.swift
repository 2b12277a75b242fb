import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec

/// The run's scheduling as a value: events in (a job finished, the run was stopped), actions out
/// (start a job, skip one, or hold it behind its twin).
///
/// Every rule of which job runs when lives here — the dependency graph, plan order, the
/// concurrency limit, twins fetched once (``SameContent``), `--fail-fast`, interruption, a spent
/// budget (``RunBudget``) and the jobs it defers, the skips that follow a failure, and which of
/// the transport's executors a small job runs on — so
/// it is tested event by event without a socket, a task or a clock (the shape of
/// async-http-client's connection-pool state machine). ``Runner`` only executes the actions:
/// it starts the job's task, records a skip in the journal, and feeds each finish back.
struct RunSchedule {
    /// What the driver does next.
    enum Action: Equatable {
        /// Start `job`: fetch it (`copyFrom` nil) or take its twin's published file, on the
        /// transport's executor `executor` (nil: the cooperative pool).
        case start(Int, copyFrom: SameContent.Source?, executor: Int?)
        /// `job` waits for its twin `behind`, which fetches the same content; it is started again
        /// (by a later ``finished(_:succeeded:)``) when that twin ends.
        case `defer`(Int, behind: Int)
        /// `job` never runs; the reason goes into its report entry.
        case skip(Int, because: String)
        /// `job` did not run because the run's budget was spent; the next run does it.
        case postpone(Int, because: RunBudget.Reason)
    }

    /// Where each job is; a job moves only forward.
    private enum Phase { case waiting, ready, deferred, running, done }

    private let graph: JobGraph
    private let limit: Int
    private let failFast: Bool
    /// Whether a job may run on one of the executors (small, no copy; ``Runner/runsOnExecutor``),
    /// given whether it copies a twin's file.
    private let mayRunOnExecutor: (_ job: Int, _ copying: Bool) -> Bool

    private var phase: [Phase]
    private var waitingOn: [Int]
    private let rank: [Int]
    private var ready = JobQueue()
    private var sameContent: SameContent
    /// Jobs running on each executor, and where each of them runs.
    private var onExecutor: [Int]
    private var placed: [Int: Int] = [:]
    /// Jobs started and not yet finished.
    private(set) var running = 0
    /// Why no more jobs start (interruption or `--fail-fast`), once that happens.
    private(set) var stopReason: String?
    /// The budget that was spent, once one is: no more jobs start, and those left are deferred.
    private(set) var budgetSpent: RunBudget.Reason?

    init(graph: JobGraph, limit: Int, failFast: Bool, executors: Int,
         mayRunOnExecutor: @escaping (_ job: Int, _ copying: Bool) -> Bool) {
        self.graph = graph
        self.limit = max(1, limit)
        self.failFast = failFast
        self.mayRunOnExecutor = mayRunOnExecutor
        phase = Array(repeating: .waiting, count: graph.jobs.count)
        waitingOn = graph.dependencies.map(\.count)
        var rank = [Int](repeating: 0, count: graph.jobs.count)
        for (position, job) in graph.order.enumerated() { rank[job] = position }
        self.rank = rank
        sameContent = SameContent(jobs: graph.jobs)
        onExecutor = Array(repeating: 0, count: executors)
        for job in graph.order where waitingOn[job] == 0 { makeReady(job) }
    }

    /// The run begins: the first jobs to start. `interrupted`, here and in
    /// ``finished(_:succeeded:interrupted:)``: the run has been interrupted, so no job starts
    /// any more (those running finish).
    mutating func begin(interrupted: Bool = false) -> [Action] {
        launch(interrupted: interrupted)
    }

    /// The run's budget is spent: no job starts any more (those running finish, or are cut by
    /// the driver for a hard cutoff), and every job not run is deferred at the ``end()``. A
    /// budget spent after the run was stopped changes nothing: its jobs are skipped.
    mutating func spend(_ reason: RunBudget.Reason) {
        if budgetSpent == nil, stopReason == nil { budgetSpent = reason }
    }

    /// `job` ended: its twins are handed back, its dependents become ready (or, after a failure,
    /// are skipped with everything that depends on them; after a deferral, they wait to be
    /// deferred too), and more jobs start.
    mutating func finished(_ job: Int, succeeded: Bool, deferred: Bool = false, interrupted: Bool = false) -> [Action] {
        precondition(phase[job] == .running, "job \(job) finished without running")
        phase[job] = .done
        running -= 1
        if let executor = placed.removeValue(forKey: job) { onExecutor[executor] -= 1 }
        var actions: [Action] = []
        for twin in sameContent.finished(job, succeeded: succeeded) { makeReady(twin) }
        for dependent in graph.dependents[job] where phase[dependent] != .done && !deferred {
            if succeeded {
                waitingOn[dependent] -= 1
                if waitingOn[dependent] == 0 { makeReady(dependent) }
            } else {
                // A job that ran and did not succeed failed (or was interrupted); a skipped job
                // never runs, and `skip` reports its dependents.
                actions += skip(dependent, because: "dependency '\(graph.jobs[job].id)' failed")
            }
        }
        if !succeeded, failFast { stop(because: "not started: --fail-fast after '\(graph.jobs[job].id)' failed") }
        return actions + launch(interrupted: interrupted)
    }

    /// The last job has finished: every job not run is deferred when the budget was spent, else
    /// skipped — its dependencies never finished, or the run stopped early — in plan order, then
    /// any job outside the order (only a manifest with a cycle has one).
    mutating func end() -> [Action] {
        precondition(running == 0, "the run ends with jobs running")
        var actions: [Action] = []
        for job in graph.order + graph.jobs.indices where phase[job] != .done {
            if let budgetSpent {
                phase[job] = .done
                actions.append(.postpone(job, because: budgetSpent))
            } else {
                actions += skip(job, because: stopReason ?? "not started")
            }
        }
        return actions
    }

    private mutating func makeReady(_ job: Int) {
        phase[job] = .ready
        ready.push(job, rank: rank[job])
    }

    /// The first reason given is the one reported.
    private mutating func stop(because reason: String) {
        if stopReason == nil { stopReason = reason }
    }

    /// Starts ready jobs in plan order up to the limit, unless the run has stopped.
    private mutating func launch(interrupted: Bool) -> [Action] {
        if interrupted { stop(because: "the run was interrupted") }
        var actions: [Action] = []
        while stopReason == nil, budgetSpent == nil, running < limit, let next = ready.pop() {
            guard phase[next] == .ready else { continue }
            switch sameContent.claim(next) {
            case .wait(let twin):
                phase[next] = .deferred
                actions.append(.defer(next, behind: twin))
            case .start(let source):
                var executor: Int?
                if mayRunOnExecutor(next, source != nil),
                   let least = onExecutor.indices.min(by: { onExecutor[$0] < onExecutor[$1] }) {
                    onExecutor[least] += 1
                    placed[next] = least
                    executor = least
                }
                phase[next] = .running
                running += 1
                actions.append(.start(next, copyFrom: source, executor: executor))
            }
        }
        return actions
    }

    /// `job` and everything that depends on it, not yet done, are skipped.
    private mutating func skip(_ job: Int, because reason: String) -> [Action] {
        var actions: [Action] = []
        var stack = [(job, reason)]
        while let (job, why) = stack.popLast() {
            guard phase[job] != .done else { continue }
            phase[job] = .done
            actions.append(.skip(job, because: why))
            for dependent in graph.dependents[job] {
                stack.append((dependent, "dependency '\(graph.jobs[job].id)' was skipped"))
            }
        }
        return actions
    }
}
