@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Testing

/// The scheduler's pure parts: ready jobs in plan order, and twins (the same content to two
/// destinations) fetched once.
@Suite struct SchedulingTests {
    @Test func readyJobsComeOutInPlanOrderWhateverOrderTheyArrive() {
        var queue = JobQueue()
        let ranks = [7, 3, 9, 0, 5, 1, 8, 2, 6, 4]
        for (job, rank) in ranks.enumerated() { queue.push(job, rank: rank) }
        var popped: [Int] = []
        while let job = queue.pop() { popped.append(ranks[job]) }
        #expect(popped == Array(0..<10))
        #expect(queue.isEmpty)
    }

    /// Which jobs may run on an event loop: a download whose size — the manifest's, or with
    /// `--locked` the lock's — is at most 1 MiB or unknown (such a job moves to the pool when it
    /// finds much on disk), and none that copies, reads a sum file, fsyncs each file or writes
    /// to a simulated slow disk.
    @Test func smallJobsAndJobsOfUnknownSizeRunOnTheLoops() throws {
        var jobs = try Self.jobs(["http://h/a", "http://h/b", "http://h/c", "http://h/d"])
        jobs[0].size = 4096
        jobs[3].size = 2 << 20
        var options = RunOptions()
        #expect(Runner.runsOnExecutor(jobs[0], options: options, copying: false, sumFile: false))
        #expect(Runner.runsOnExecutor(jobs[1], options: options, copying: false, sumFile: false))
        #expect(!Runner.runsOnExecutor(jobs[3], options: options, copying: false, sumFile: false))
        options.lock = LockFile(manifest: "m.yaml", jobs: [
            "j1": .init(dest: "d1.bin", size: 4096, sha256: String(repeating: "0", count: 64), mirrors: []),
            "j2": .init(dest: "d2.bin", size: 2 << 20, sha256: String(repeating: "0", count: 64), mirrors: []),
        ])
        #expect(Runner.runsOnExecutor(jobs[1], options: options, copying: false, sumFile: false))
        #expect(!Runner.runsOnExecutor(jobs[2], options: options, copying: false, sumFile: false))
        #expect(!Runner.runsOnExecutor(jobs[0], options: options, copying: true, sumFile: false))
        #expect(!Runner.runsOnExecutor(jobs[0], options: options, copying: false, sumFile: true))
        options.durability = .strict
        #expect(!Runner.runsOnExecutor(jobs[0], options: options, copying: false, sumFile: false))
    }

    static func jobs(_ urls: [String]) throws -> [Job] {
        let lines = urls.enumerated().map { "  - {id: j\($0), url: \"\($1)\", dest: d\($0).bin}" }
        let text = "version: 1\njobs:\n" + lines.joined(separator: "\n") + "\n"
        return try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp").jobs
    }

    @Test func aTwinWaitsForTheFirstAndTakesItsFile() throws {
        var same = SameContent(jobs: try Self.jobs(["http://h/a", "http://h/b", "http://h/a"]))
        guard case .start(nil) = same.claim(0), case .start(nil) = same.claim(1) else {
            Issue.record("the first of each content should download")
            return
        }
        guard case .wait = same.claim(2) else {
            Issue.record("the twin should wait")
            return
        }
        #expect(same.finished(0, succeeded: true) == [2])
        guard case .start(let source?) = same.claim(2) else {
            Issue.record("the twin should take the published file")
            return
        }
        #expect(source.id == "j0" && source.dest == "d0.bin")
        // A job without a twin is never held.
        #expect(same.finished(1, succeeded: true).isEmpty)
    }

    @Test func afterAFailureEachTwinTriesOnItsOwn() throws {
        var same = SameContent(jobs: try Self.jobs(["http://h/a", "http://h/a"]))
        _ = same.claim(0)
        _ = same.claim(1)
        #expect(same.finished(0, succeeded: false) == [1])
        guard case .start(nil) = same.claim(1) else {
            Issue.record("the twin should download itself")
            return
        }
    }
}
