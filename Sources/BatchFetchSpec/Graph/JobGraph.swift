/// The jobs of a valid manifest as a dependency DAG, with a deterministic order and levels.
///
/// Level 0 holds jobs without dependencies; a job's level is one more than its deepest
/// dependency, so every level can run in parallel once the previous ones are done. ``order``
/// sorts by level, then manifest position: the same manifest always plans the same way.
public struct JobGraph: Sendable {
    public let jobs: [Job]
    /// For each job, the indices of the jobs it waits for.
    public let dependencies: [[Int]]
    /// For each job, the indices of the jobs that wait for it.
    public let dependents: [[Int]]
    /// For each job, its level.
    public let levels: [Int]
    /// Job indices in execution order.
    public let order: [Int]
    /// The index of each job another job names (in `depends_on` or `checksums_from`), by its id:
    /// only those, because a table of every id cost a million-job list 50 bytes a job for lookups
    /// no one makes.
    public let indexByID: [String: Int]

    public var levelCount: Int { (levels.max() ?? -1) + 1 }

    /// Builds the graph; the manifest must have passed validation (known ids, no cycles).
    public init(manifest: Manifest) {
        let jobs = manifest.jobs
        self.jobs = jobs
        var named = Set<String>()
        for job in jobs { named.formUnion(job.dependencies) }
        var index: [String: Int] = [:]
        if !named.isEmpty {
            for position in jobs.indices.reversed() where named.contains(jobs[position].id) {
                index[jobs[position].id] = position  // the first job of an id wins
            }
        }
        indexByID = index
        dependencies = jobs.indices.map { position in jobs[position].dependencies.compactMap { index[$0] } }
        var dependents = [[Int]](repeating: [], count: jobs.count)
        for (job, deps) in dependencies.enumerated() {
            for dep in deps { dependents[dep].append(job) }
        }
        self.dependents = dependents
        levels = Self.levels(dependencies: dependencies, dependents: dependents)
        // By level, then position: one pass into buckets instead of sorting a million indices.
        var buckets = [[Int]](repeating: [], count: (levels.max() ?? -1) + 1)
        for position in jobs.indices { buckets[levels[position]].append(position) }
        order = Array(buckets.joined())
    }

    /// Longest-path levels by Kahn's algorithm; jobs on a cycle (never in a validated manifest)
    /// keep level 0.
    private static func levels(dependencies: [[Int]], dependents: [[Int]]) -> [Int] {
        var remaining = dependencies.map(\.count)
        var levels = [Int](repeating: 0, count: dependencies.count)
        var ready = remaining.indices.filter { remaining[$0] == 0 }
        while let job = ready.popLast() {
            for dependent in dependents[job] {
                levels[dependent] = max(levels[dependent], levels[job] + 1)
                remaining[dependent] -= 1
                if remaining[dependent] == 0 { ready.append(dependent) }
            }
        }
        return levels
    }

    /// Every dependency cycle, one concrete cycle per strongly connected component, each starting
    /// at its earliest job in manifest order. `edges[i]` lists the jobs job `i` depends on.
    public static func cycles(edges: [[Int]]) -> [[Int]] {
        let components = stronglyConnectedComponents(edges: edges)
        var result: [[Int]] = []
        for component in components {
            let members = Set(component)
            guard let start = component.min() else { continue }
            if component.count == 1 && !edges[start].contains(start) { continue }
            result.append(shortestCycle(from: start, within: members, edges: edges))
        }
        return result.sorted { $0[0] < $1[0] }
    }

    /// Breadth-first search back to `start`, following edges in manifest order.
    private static func shortestCycle(from start: Int, within members: Set<Int>, edges: [[Int]]) -> [Int] {
        var parent: [Int: Int] = [:]
        var queue = [start]
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            for next in edges[node] where members.contains(next) {
                if next == start {
                    var path = [node]
                    while let previous = parent[path[0]] { path.insert(previous, at: 0) }
                    return path + [start]
                }
                if parent[next] == nil && next != start {
                    parent[next] = node
                    queue.append(next)
                }
            }
        }
        return [start, start]
    }

    /// Tarjan's algorithm without recursion, so 100,000-job chains do not overflow the stack.
    private static func stronglyConnectedComponents(edges: [[Int]]) -> [[Int]] {
        let count = edges.count
        var index = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var nextIndex = 0
        for root in 0..<count where index[root] < 0 {
            var work: [(node: Int, edge: Int)] = [(root, 0)]
            index[root] = nextIndex; low[root] = nextIndex; nextIndex += 1
            stack.append(root); onStack[root] = true
            while let (node, edge) = work.last {
                if edge < edges[node].count {
                    work[work.count - 1].edge += 1
                    let next = edges[node][edge]
                    if index[next] < 0 {
                        index[next] = nextIndex; low[next] = nextIndex; nextIndex += 1
                        stack.append(next); onStack[next] = true
                        work.append((next, 0))
                    } else if onStack[next] {
                        low[node] = min(low[node], index[next])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                if low[node] == index[node] {
                    var component: [Int] = []
                    while let member = stack.popLast() {
                        onStack[member] = false
                        component.append(member)
                        if member == node { break }
                    }
                    components.append(component)
                }
            }
        }
        return components
    }
}
