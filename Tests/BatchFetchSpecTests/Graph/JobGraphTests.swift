import BatchFetchSpec
import Foundation
import Testing

@Suite struct JobGraphTests {
    private func manifest(_ jobs: [(String, [String])]) throws -> Manifest {
        var text = "version: 1\njobs:\n"
        for (id, deps) in jobs {
            text += "  - {id: \(id), url: 'https://h.example/\(id)', depends_on: [\(deps.joined(separator: ", "))]}\n"
        }
        return try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
    }

    @Test func diamondHasThreeLevelsInDeterministicOrder() throws {
        let graph = JobGraph(manifest: try manifest([("d", ["b", "c"]), ("c", ["a"]), ("b", ["a"]), ("a", []), ("e", [])]))
        #expect(graph.order.map { graph.jobs[$0].id } == ["a", "e", "c", "b", "d"])
        #expect(graph.levels == [2, 1, 1, 0, 0])
        #expect(graph.levelCount == 3)
        #expect(graph.dependents[3].map { graph.jobs[$0].id } == ["c", "b"])
        #expect(graph.dependencies[0].map { graph.jobs[$0].id } == ["b", "c"])
    }

    @Test func orderRespectsEveryDependency() throws {
        let graph = JobGraph(manifest: try manifest([("z", ["y"]), ("y", ["x"]), ("x", []), ("w", ["z", "x"])]))
        var position: [Int: Int] = [:]
        for (index, job) in graph.order.enumerated() { position[job] = index }
        for (job, deps) in graph.dependencies.enumerated() {
            for dep in deps { #expect(position[dep]! < position[job]!) }
        }
    }

    @Test func cyclesAreFoundOncePerComponentStartingAtTheEarliestJob() {
        // 0 -> 1 -> 2 -> 0, 3 -> 3, 4 -> 0 (not on a cycle), 5 <-> 6
        let edges = [[1], [2], [0], [3], [0], [6], [5]]
        #expect(JobGraph.cycles(edges: edges) == [[0, 1, 2, 0], [3, 3], [5, 6, 5]])
    }

    @Test func longChainsNeitherOverflowNorCycle() {
        let count = 100_000
        var edges = (0..<count).map { $0 == 0 ? [] : [$0 - 1] }
        #expect(JobGraph.cycles(edges: edges).isEmpty)
        edges[0] = [count - 1]
        let cycles = JobGraph.cycles(edges: edges)
        #expect(cycles.count == 1)
        #expect(cycles.first?.count == count + 1)
    }
}

@Suite struct ManifestSelectionTests {
    @Test func selectionKeepsDependenciesInManifestOrder() throws {
        let text = """
            version: 1
            jobs:
              - {id: sums, url: 'https://h.example/SUMS'}
              - {id: a, url: 'https://h.example/a', checksums_from: sums}
              - {id: b, url: 'https://h.example/b', depends_on: [a]}
              - {id: c, url: 'https://h.example/c'}
            """
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        let selected = try manifest.selecting(["b"]).get()
        #expect(selected.jobs.map(\.id) == ["sums", "a", "b"])
        guard case .failure(let error) = manifest.selecting(["c", "bb", "zzz"]) else {
            Issue.record("unknown ids accepted")
            return
        }
        #expect(error.description == "unknown job 'bb' (did you mean 'b'?); unknown job 'zzz'")
    }
}
