@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Testing

/// The run's schedule, event by event: what starts, waits or is skipped after each finish, with
/// no task, socket or clock.
@Suite struct RunScheduleTests {
    typealias Action = RunSchedule.Action

    /// A graph of jobs `j0…` fetching the given URLs, each line's `depends_on` by index.
    static func graph(_ urls: [String], dependsOn: [Int: [Int]] = [:]) throws -> JobGraph {
        let lines = urls.enumerated().map { index, url in
            let deps = dependsOn[index].map { ", depends_on: [" + $0.map { "j\($0)" }.joined(separator: ", ") + "]" } ?? ""
            return "  - {id: j\(index), url: \"\(url)\", dest: d\(index).bin\(deps)}"
        }
        let text = "version: 1\njobs:\n" + lines.joined(separator: "\n") + "\n"
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml",
                                                                  baseDirectory: "/tmp")
        return JobGraph(manifest: manifest)
    }

    static func schedule(_ graph: JobGraph, limit: Int, failFast: Bool = false, executors: Int = 0,
                         onExecutor: @escaping (Int, Bool) -> Bool = { _, _ in false }) -> RunSchedule {
        RunSchedule(graph: graph, limit: limit, failFast: failFast, executors: executors, mayRunOnExecutor: onExecutor)
    }

    static func fetch(_ job: Int) -> Action { .start(job, copyFrom: nil, executor: nil) }

    @Test func startsReadyJobsInPlanOrderUpToTheLimit() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/c", "http://h/d"]), limit: 2)
        #expect(schedule.begin() == [Self.fetch(0), Self.fetch(1)])
        #expect(schedule.running == 2)
        #expect(schedule.finished(1, succeeded: true) == [Self.fetch(2)])
        // A failure without --fail-fast stops nothing else.
        #expect(schedule.finished(0, succeeded: false) == [Self.fetch(3)])
        #expect(schedule.finished(2, succeeded: true) == [])
        #expect(schedule.finished(3, succeeded: true) == [])
        #expect(schedule.end() == [])
    }

    @Test func aDependentStartsWhenAllItsDependenciesSucceeded() throws {
        // j2 needs j0 and j1.
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/c"], dependsOn: [2: [0, 1]]),
                                     limit: 8)
        #expect(schedule.begin() == [Self.fetch(0), Self.fetch(1)])
        #expect(schedule.finished(0, succeeded: true) == [])
        #expect(schedule.finished(1, succeeded: true) == [Self.fetch(2)])
    }

    @Test func aFailureSkipsItsDependentsAndTheirsWithTheirReasons() throws {
        // j1 needs j0, j2 needs j1, j3 needs nothing.
        var schedule = Self.schedule(
            try Self.graph(["http://h/a", "http://h/b", "http://h/c", "http://h/d"], dependsOn: [1: [0], 2: [1]]), limit: 1)
        #expect(schedule.begin() == [Self.fetch(0)])
        #expect(schedule.finished(0, succeeded: false) == [
            .skip(1, because: "dependency 'j0' failed"),
            .skip(2, because: "dependency 'j1' was skipped"),
            Self.fetch(3),
        ])
        #expect(schedule.finished(3, succeeded: true) == [])
        // Every job is accounted for: nothing is left to skip.
        #expect(schedule.end() == [])
    }

    @Test func failFastStartsNothingMoreAndSkipsTheRestAtTheEnd() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/c"], dependsOn: [2: [1]]),
                                     limit: 1, failFast: true)
        #expect(schedule.begin() == [Self.fetch(0)])
        #expect(schedule.finished(0, succeeded: false) == [])
        #expect(schedule.stopReason == "not started: --fail-fast after 'j0' failed")
        #expect(schedule.end() == [
            .skip(1, because: "not started: --fail-fast after 'j0' failed"),
            .skip(2, because: "dependency 'j1' was skipped"),
        ])
    }

    @Test func anInterruptedRunLetsRunningJobsFinishAndStartsNoOther() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/c"]), limit: 2, failFast: true)
        #expect(schedule.begin() == [Self.fetch(0), Self.fetch(1)])
        #expect(schedule.finished(0, succeeded: true, interrupted: true) == [])
        // A later --fail-fast does not replace the reason already given.
        #expect(schedule.finished(1, succeeded: false) == [])
        #expect(schedule.end() == [.skip(2, because: "the run was interrupted")])
    }

    @Test func aTwinWaitsBehindTheFirstThenTakesItsFile() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/a"]), limit: 4)
        #expect(schedule.begin() == [Self.fetch(0), Self.fetch(1), .defer(2, behind: 0)])
        #expect(schedule.running == 2)
        #expect(schedule.finished(0, succeeded: true) == [
            .start(2, copyFrom: SameContent.Source(dest: "d0.bin", id: "j0"), executor: nil),
        ])
    }

    @Test func afterItsTwinFailedAHeldJobFetchesItself() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/a"]), limit: 4)
        #expect(schedule.begin() == [Self.fetch(0), .defer(1, behind: 0)])
        #expect(schedule.finished(0, succeeded: false) == [Self.fetch(1)])
    }

    @Test func aHeldTwinDoesNotTakeASlotAndAStoppedRunSkipsIt() throws {
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/a", "http://h/b"]), limit: 2)
        #expect(schedule.begin() == [Self.fetch(0), .defer(1, behind: 0), Self.fetch(2)])
        #expect(schedule.finished(2, succeeded: true, interrupted: true) == [])
        #expect(schedule.finished(0, succeeded: true, interrupted: true) == [])
        #expect(schedule.end() == [.skip(1, because: "the run was interrupted")])
    }

    @Test func smallJobsGoToTheLeastBusyExecutorAndFreeItWhenTheyFinish() throws {
        // j2 is not small (it may not run on an executor); the others are.
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/b", "http://h/c", "http://h/d", "http://h/e"]),
                                     limit: 3, executors: 2, onExecutor: { job, _ in job != 2 })
        #expect(schedule.begin() == [
            .start(0, copyFrom: nil, executor: 0), .start(1, copyFrom: nil, executor: 1), .start(2, copyFrom: nil, executor: nil),
        ])
        #expect(schedule.finished(1, succeeded: true) == [.start(3, copyFrom: nil, executor: 1)])
        #expect(schedule.finished(2, succeeded: true) == [.start(4, copyFrom: nil, executor: 0)])
    }

    @Test func aCopyingTwinIsAskedAboutAsACopy() throws {
        var asked: [(Int, Bool)] = []
        var schedule = Self.schedule(try Self.graph(["http://h/a", "http://h/a"]), limit: 2, executors: 1,
                                     onExecutor: { job, copying in asked.append((job, copying)); return !copying })
        _ = schedule.begin()
        #expect(schedule.finished(0, succeeded: true)
            == [.start(1, copyFrom: SameContent.Source(dest: "d0.bin", id: "j0"), executor: nil)])
        #expect(asked.map(\.0) == [0, 1] && asked.map(\.1) == [false, true])
    }

    /// A spent budget starts nothing more; the jobs left are deferred at the end, in plan order,
    /// the dependents of a deferred job too, while a failed job's dependents are still skipped.
    @Test func aSpentBudgetDefersWhatIsLeftAndTheDependentsOfADeferredJob() throws {
        // j1 needs j0; j3 needs j2; j4 stands alone.
        var schedule = Self.schedule(
            try Self.graph(["http://h/a", "http://h/b", "http://h/c", "http://h/d", "http://h/e"], dependsOn: [1: [0], 3: [2]]),
            limit: 2)
        #expect(schedule.begin() == [Self.fetch(0), Self.fetch(2)])
        schedule.spend(.maxDuration)
        // j0 failed: j1 is skipped as ever; nothing starts.
        #expect(schedule.finished(0, succeeded: false) == [.skip(1, because: "dependency 'j0' failed")])
        // j2 was cut (hard): deferred, and j3 waits to be deferred with it.
        #expect(schedule.finished(2, succeeded: false, deferred: true) == [])
        // In plan order (j4, ready from the start, comes before j3).
        #expect(schedule.end() == [.postpone(4, because: .maxDuration), .postpone(3, because: .maxDuration)])
    }

    /// The first reason counts: a budget spent after an interruption defers nothing, and a
    /// second budget does not rename the first.
    @Test func theFirstStopCounts() throws {
        var interrupted = Self.schedule(try Self.graph(["http://h/a", "http://h/b"]), limit: 1)
        #expect(interrupted.begin() == [Self.fetch(0)])
        #expect(interrupted.finished(0, succeeded: false, interrupted: true) == [])
        interrupted.spend(.maxBytes)
        #expect(interrupted.end() == [.skip(1, because: "the run was interrupted")])

        var spent = Self.schedule(try Self.graph(["http://h/a", "http://h/b"]), limit: 1)
        #expect(spent.begin() == [Self.fetch(0)])
        spent.spend(.maxBytes)
        spent.spend(.maxDuration)
        #expect(spent.finished(0, succeeded: true) == [])
        #expect(spent.end() == [.postpone(1, because: .maxBytes)])
    }
}
