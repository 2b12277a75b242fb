@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The run's bytes for its progress bar: done against known, from the manifest's sizes, the
/// sizes responses announce, and what finished jobs published; failed and skipped jobs leave the
/// sum, so a run that ends reads 100% of what it could do.
@Suite struct ActiveJobsTests {
    @Test func bytesDoneAgainstBytesKnown() throws {
        var jobs = try SchedulingTests.jobs(["http://h/big", "http://h/small", "http://h/unsized", "http://h/skipped"])
        jobs[0].size = 1 << 30
        jobs[1].size = 1 << 20
        jobs[3].size = 4 << 20
        let active = ActiveJobs(jobs: jobs, started: .now())
        #expect(active.snapshot() == nil, "no job in flight, no snapshot")

        let big = JobProgress(total: 1 << 30)
        active.add(0, id: "j0", progress: big, expected: 1 << 30)
        big.received(256 << 20)
        var progress = try #require(active.snapshot())
        #expect(progress.bytesDone == 256 << 20)
        #expect(progress.bytesKnown == (1 << 30) + (1 << 20) + (4 << 20))
        #expect(progress.unsized == 1)

        // The unsized job's response announces 8 MiB: it is known from then on.
        let unsized = JobProgress(total: nil)
        active.add(2, id: "j2", progress: unsized, expected: nil)
        progress = try #require(active.snapshot())
        #expect(progress.unsized == 1, "running, but no size announced yet")
        unsized.moved(to: 0, total: 8 << 20)
        progress = try #require(active.snapshot())
        #expect(progress.unsized == 0)
        #expect(progress.bytesKnown == (1 << 30) + (1 << 20) + (4 << 20) + (8 << 20))

        // The small job was up to date: all of its bytes are done at once.
        active.add(1, id: "j1", progress: JobProgress(total: 1 << 20), expected: 1 << 20)
        var upToDate = JobResult(id: "j1", status: .upToDate, dest: "d1.bin")
        upToDate.size = 1 << 20
        active.finished(1, upToDate)
        // The unsized job fails, and the last one is skipped: both leave the sum.
        active.finished(2, JobResult(id: "j2", status: .failed, dest: "d2.bin"))
        active.skipped(expected: 4 << 20)
        progress = try #require(active.snapshot())
        #expect(progress.finished == 3)
        #expect(progress.bytesDone == (256 << 20) + (1 << 20))
        #expect(progress.bytesKnown == (1 << 30) + (1 << 20))
    }
}
