@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Budgets on real runs: reached by bytes the origin has served or by a manual clock the test
/// advances, never by sleeping; a gate in the origin holds the transfer where the test wants it.
@Suite struct BudgetTests {
    static let half: Int64 = 8 << 20

    /// A 16 MiB file that stops at half until the test opens the gate, and a small one behind it.
    private func gatedWorld() async throws -> Harness {
        let world = try await Harness()
        var file = OriginFile.generated(size: 2 * Self.half, seed: 41)
        file.pauseAfterServed = Self.half
        file.paused = true
        world.origin.serve("/big.bin", file)
        world.origin.serve("/small.bin", .generated(size: 1000, seed: 42))
        return world
    }

    /// Starts the gated jobs under `header` on a manual clock and returns once the big file's
    /// transfer is held at the gate.
    private func startAtTheGate(_ world: Harness, _ header: String) async throws -> (RunHandle, ManualClock) {
        let clock = ManualClock()
        var options = RunOptions()
        options.time = clock
        let run = try world.start(header + Self.gatedJobs, options: options)
        #expect(await eventually { world.origin.bytesServed("/big.bin") >= Self.half })
        return (run, clock)
    }

    private static let gatedJobs = """
        jobs:
          - {id: big, url: '{origin}/big.bin', dest: big.bin}
          - {id: small, url: '{origin}/small.bin', dest: small.bin, depends_on: [big]}
        """

    /// Soft `max_bytes`: a job starts while the bytes so far are under the budget; once they
    /// reach it, the rest are deferred with their dependents, and the next run does them.
    @Test func aSoftByteBudgetDefersTheJobsLeftAndTheNextRunDoesThem() async throws {
        let world = try await Harness()
        for name in ["a", "b", "c", "d"] { world.origin.serve("/\(name)", .generated(size: 1000, seed: 7)) }
        let manifest = """
            version: 1
            concurrency: 1
            max_bytes: 1500
            jobs:
              - {id: a, url: '{origin}/a', dest: a}
              - {id: b, url: '{origin}/b', dest: b}
              - {id: c, url: '{origin}/c', dest: c}
              - {id: d, url: '{origin}/d', dest: d, depends_on: [c]}
            """
        let report = try await world.run(manifest)
        #expect(report.status == .deferred)
        #expect(report.jobs.map(\.status) == [.downloaded, .downloaded, .deferred, .deferred])
        #expect(report.jobs.map(\.deferredBecause) == [nil, nil, "max_bytes", "max_bytes"])
        #expect(report.summary.deferred == 2 && report.summary.downloaded == 2)
        #expect(world.origin.requests("/c").isEmpty)

        let next = try await world.run(manifest.replacingOccurrences(of: "max_bytes: 1500", with: "max_bytes: 1MiB"))
        await world.close()
        #expect(next.status == .succeeded)
        #expect(next.jobs.map(\.status) == [.upToDate, .upToDate, .downloaded, .downloaded])
        #expect(next.summary.deferred == nil)
    }

    /// Hard `max_bytes`: the transfer is cut the moment the run's bytes reach the budget (the
    /// gate holds it at half, past the budget, so it cannot finish first); its partial is kept,
    /// the job and its dependent are deferred, and the next run resumes it.
    @Test func aHardByteBudgetCutsTheTransferAndTheNextRunResumesIt() async throws {
        let world = try await gatedWorld()
        let report = try await world.run("version: 1\nmax_bytes: 4MiB\ncutoff: hard\n" + Self.gatedJobs)
        #expect(report.status == .deferred)
        #expect(report.jobs.map(\.status) == [.deferred, .deferred])
        #expect(report.jobs.map(\.deferredBecause) == ["max_bytes", "max_bytes"])
        #expect(report.jobs[0].error == nil)
        let listed = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        #expect(world.exists("big.bin.part") && !world.exists("big.bin"), "\(listed) \(report.jobs[0])")

        world.origin.update("/big.bin") { $0.paused = false }
        let next = try await world.run("version: 1\n" + Self.gatedJobs)
        await world.close()
        #expect(next.status == .succeeded)
        #expect((next.jobs[0].resumedFrom ?? 0) > 0)
    }

    /// Hard `max_duration` on a manual clock: the run is cut when the clock passes the budget.
    @Test func aHardDurationBudgetCutsTheRunWhenTheClockPassesIt() async throws {
        let world = try await gatedWorld()
        let (run, clock) = try await startAtTheGate(world, "version: 1\nmax_duration: 10m\ncutoff: hard\n")
        #expect(await ManualClock.until { clock.sleepers == 1 })
        clock.advance(by: .seconds(599))
        #expect(clock.sleepers == 1, "cut before the budget was spent")
        clock.advance(by: .seconds(1))
        let report = await run.report
        await world.close()
        #expect(report.status == .deferred)
        #expect(report.jobs.map(\.deferredBecause) == ["max_duration", "max_duration"])
    }

    /// Soft `max_duration`: the running job finishes; nothing starts after the budget.
    @Test func aSoftDurationBudgetLetsTheRunningJobFinish() async throws {
        let world = try await gatedWorld()
        let (run, clock) = try await startAtTheGate(world, "version: 1\nmax_duration: 1h\n")
        clock.advance(by: .seconds(3601))
        world.origin.update("/big.bin") { $0.paused = false }
        let report = await run.report
        await world.close()
        #expect(report.status == .deferred)
        #expect(report.jobs.map(\.status) == [.downloaded, .deferred])
        #expect(report.jobs[1].deferredBecause == "max_duration")
        #expect(world.origin.requests("/small.bin").isEmpty)
    }

    /// A failure still makes the run `failed` (exit 1) when a budget deferred other jobs.
    @Test func aFailureOutranksADeferral() async throws {
        let world = try await Harness()
        world.origin.serve("/a", .generated(size: 1000, seed: 7))
        let report = try await world.run("""
            version: 1
            concurrency: 1
            max_bytes: 1
            jobs:
              - {id: gone, url: '{origin}/gone', dest: gone, retries: 0}
              - {id: a, url: '{origin}/a', dest: a}
              - {id: b, url: '{origin}/a', dest: b}
            """)
        await world.close()
        #expect(report.jobs.map(\.status) == [.failed, .downloaded, .deferred])
        #expect(report.status == .failed)
    }
}
