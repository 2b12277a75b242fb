import BatchFetchSpec
import Foundation
import Testing
import TestOrigin

/// How a manifest splits into shards: components whole, balanced by declared size, the same on
/// every machine, and stable when the manifest changes.
@Suite struct ShardAssignmentTests {
    /// A job line: id, declared size (nil for none), dependencies.
    typealias Line = (id: String, size: Int64?, dependsOn: [String])

    private func manifest(_ lines: [Line]) throws -> Manifest {
        var text = "version: 1\njobs:\n"
        for line in lines {
            text += "  - {id: \(line.id), url: 'https://h.example/\(line.id)'"
            if let size = line.size { text += ", size: \(size)" }
            if !line.dependsOn.isEmpty { text += ", depends_on: [\(line.dependsOn.joined(separator: ", "))]" }
            text += "}\n"
        }
        return try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
    }

    /// 2,000 jobs of varied sizes; every tenth waits for the one before it.
    private func lines(count: Int = 2000, seed: UInt64 = 7) -> [Line] {
        var random = seed
        return (0..<count).map { index in
            random = random &* 6364136223846793005 &+ 1442695040888963407
            let size = Int64(1000 + (random >> 33) % 5_000_000)
            return (String(format: "job-%05d", index), size, index % 10 == 9 ? [String(format: "job-%05d", index - 1)] : [])
        }
    }

    private func shardByID(_ manifest: Manifest, count: Int) -> [String: Int32] {
        let assignment = ShardAssignment(jobs: manifest.jobs, count: count)
        return Dictionary(uniqueKeysWithValues: zip(manifest.jobs.map(\.id), assignment.shardOfJob))
    }

    @Test func aJobIsAlwaysInTheShardOfEverythingItWaitsFor() throws {
        var lines = lines(count: 500)
        lines.append(("sums", 100, []))
        lines.append(("tail", 100, ["job-00003", "sums"]))
        let manifest = try manifest(lines)
        for count in [1, 2, 3, 7, 64] {
            let shard = shardByID(manifest, count: count)
            for job in manifest.jobs {
                for dependency in job.dependencies { #expect(shard[job.id] == shard[dependency], "\(job.id) at \(count) shards") }
            }
        }
    }

    @Test func everyJobIsInExactlyOneShardAndTheTotalsAddUp() throws {
        let manifest = try manifest(lines())
        let assignment = ShardAssignment(jobs: manifest.jobs, count: 5)
        var seen: [String] = []
        for index in 0..<5 {
            let part = manifest.selecting(Shard(index: index, count: 5)!, of: assignment)
            #expect(part.jobs.count == assignment.totals[index].jobs)
            #expect(part.jobs.reduce(0) { $0 + ($1.size ?? 0) } == assignment.totals[index].bytes)
            seen += part.jobs.map(\.id)
        }
        #expect(seen.sorted() == manifest.jobs.map(\.id).sorted())
    }

    @Test func sharesOfDeclaredBytesStayWithinTheSlackOfAnEvenShare() throws {
        let manifest = try manifest(lines())
        for count in [2, 4, 8, 16] {
            let totals = ShardAssignment(jobs: manifest.jobs, count: count).totals
            let even = Double(totals.reduce(0) { $0 + $1.bytes }) / Double(count)
            let fullest = Double(totals.map(\.bytes).max()!)
            #expect(fullest <= even * (1 + ShardAssignment.slack) + 5_000_000, "\(count) shards: \(fullest / even)× an even share")
        }
    }

    @Test func withoutSizesJobsAreBalancedByCount() throws {
        let manifest = try manifest((0..<1000).map { (String(format: "n-%04d", $0), nil, []) })
        let totals = ShardAssignment(jobs: manifest.jobs, count: 4).totals
        #expect(totals.map(\.jobs).reduce(0, +) == 1000)
        #expect(totals.allSatisfy { $0.jobs >= 240 && $0.jobs <= 255 && $0.unsizedJobs == $0.jobs }, "\(totals.map(\.jobs))")
    }

    @Test func theSplitDependsOnTheJobsNotOnTheirOrderInTheManifest() throws {
        let lines = lines(count: 600)
        var shuffled = lines
        var generator = SeededGenerator(seed: 7)
        shuffled.shuffle(using: &generator)
        #expect(shardByID(try manifest(lines), count: 6) == shardByID(try manifest(shuffled), count: 6))
    }

    @Test func addingOrRemovingAJobMovesFewOthers() throws {
        let lines = lines()
        let before = shardByID(try manifest(lines), count: 8)
        let added = shardByID(try manifest(lines + [("job-new", 2_000_000, [])]), count: 8)
        let removed = shardByID(try manifest(Array(lines.dropFirst(1))), count: 8)
        let movedByAdding = before.filter { added[$0.key] != $0.value }.count
        let movedByRemoving = removed.filter { before[$0.key] != $0.value }.count
        // Sorting into the lightest shard would move most of the 2,000 jobs.
        #expect(movedByAdding <= 40, "adding one job moved \(movedByAdding) of 2000")
        #expect(movedByRemoving <= 40, "removing one job moved \(movedByRemoving) of 2000")
    }

    @Test func moreShardsThanComponentsLeavesSomeEmpty() throws {
        let manifest = try manifest([("a", 10, []), ("b", 10, ["a"]), ("c", 10, [])])
        let assignment = ShardAssignment(jobs: manifest.jobs, count: 5)
        #expect(assignment.totals.filter { $0.jobs == 0 }.count == 3)
        #expect(assignment.totals.map(\.largestComponent).max() == 2)
    }
}
