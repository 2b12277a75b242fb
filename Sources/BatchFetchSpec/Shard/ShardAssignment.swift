/// Which shard each job of a manifest belongs to: the same answer on every machine, from the
/// manifest alone (Docs/Contracts.md §7 has the rule for users).
///
/// The rule, in order:
/// 1. **Components stay whole.** Jobs joined by `depends_on` or `checksums_from` (in either
///    direction) form a connected component, and a component is one unit: a job always runs
///    with everything it waits for, so no shard waits for another.
/// 2. **Weight** is the declared `size`; a job without one weighs the mean declared size (1 when
///    no job declares a size), so a manifest without sizes is balanced by count.
/// 3. **Placement**: components from the heaviest down (ties by key hash, then key) each try
///    their own sequence of shards — a hash of the component's key, its smallest job id in
///    UTF-8 order — and take the first whose load stays within ``slack`` (2%) above an even
///    share; when 8 tries all overflow, the least loaded shard (lowest index on ties).
///
/// Why this rule: balance by bytes within ~2% (unless one component outweighs an even share),
/// and stability — a component goes where its own hash sends it unless that shard is full, so
/// adding, removing or reordering jobs moves few others (bench/results/shards.md measures it),
/// where sorting into the lightest shard (LPT) would reshuffle most of the manifest. The key
/// and hash (FNV-1a, splitmix64) depend on no platform, process seed or manifest order.
package struct ShardAssignment: Sendable {
    /// What one shard holds.
    package struct Total: Sendable, Equatable {
        package var jobs = 0
        package var components = 0
        /// Sum of declared sizes.
        package var bytes: Int64 = 0
        /// Jobs without a declared size (not in `bytes`).
        package var unsizedJobs = 0
        /// Jobs in the largest component.
        package var largestComponent = 0
    }

    package let count: Int
    /// Each job's shard, by manifest position.
    package let shardOfJob: [Int32]
    package let totals: [Total]

    /// How far above an even share a shard may be filled before a component tries its next shard.
    package static let slack = 0.02
    /// Shards a component tries in its own order before it takes the least loaded one.
    static let tries: UInt64 = 8

    package init(jobs: [Job], count: Int) {
        precondition(count >= 1, "a manifest splits into at least one shard")
        self.count = count
        let components = Components(jobs: jobs)
        let weights = Self.weights(jobs: jobs, components: components)
        let keys = components.keys.map { Self.hash(jobs[$0].id) }
        // Sorting plain tuples rather than indices through a closure that reads three arrays
        // halves the sort of a million components; equal weight and hash fall back to the ids.
        let order = components.keys.indices.map { (weight: weights[$0], key: keys[$0], component: $0) }.sorted { a, b in
            if a.weight != b.weight { return a.weight > b.weight }
            if a.key != b.key { return a.key < b.key }
            return jobs[components.keys[a.component]].id.utf8.lexicographicallyPrecedes(jobs[components.keys[b.component]].id.utf8)
        }.map(\.component)
        let capacity = Double(weights.reduce(0, Self.saturatingAdd)) * (1 + Self.slack) / Double(count)
        var load = [Int64](repeating: 0, count: count)
        var shardOfComponent = [Int32](repeating: 0, count: weights.count)
        for component in order {
            let weight = weights[component]
            var chosen: Int?
            for attempt in 0..<Self.tries {
                let shard = Int(Self.mix(keys[component] &+ attempt) % UInt64(count))
                if Double(Self.saturatingAdd(load[shard], weight)) <= capacity {
                    chosen = shard
                    break
                }
            }
            let shard = chosen ?? load.indices.min { (load[$0], $0) < (load[$1], $1) }!
            load[shard] = Self.saturatingAdd(load[shard], weight)
            shardOfComponent[component] = Int32(shard)
        }
        var totals = [Total](repeating: Total(), count: count)
        var componentJobs = [Int](repeating: 0, count: weights.count)
        for position in jobs.indices { componentJobs[components.ofJob[position]] += 1 }
        for component in componentJobs.indices {
            let shard = Int(shardOfComponent[component])
            totals[shard].components += 1
            totals[shard].largestComponent = max(totals[shard].largestComponent, componentJobs[component])
        }
        shardOfJob = jobs.indices.map { position in
            let shard = shardOfComponent[components.ofJob[position]]
            totals[Int(shard)].jobs += 1
            if let size = jobs[position].size {
                totals[Int(shard)].bytes = Self.saturatingAdd(totals[Int(shard)].bytes, size)
            } else {
                totals[Int(shard)].unsizedJobs += 1
            }
            return shard
        }
        self.totals = totals
    }

    /// Whether the job at `position` belongs to `shard`.
    package func contains(_ position: Int, in shard: Shard) -> Bool {
        Int(shardOfJob[position]) == shard.index
    }

    /// Each component's weight: declared sizes, and the mean declared size for each job without one.
    private static func weights(jobs: [Job], components: Components) -> [Int64] {
        var declared: Int64 = 0
        var sized: Int64 = 0
        for position in jobs.indices {
            guard let size = jobs[position].size else { continue }
            declared = saturatingAdd(declared, size)
            sized += 1
        }
        let fill = sized == 0 ? 1 : max(1, declared / sized)
        var weights = [Int64](repeating: 0, count: components.keys.count)
        for position in jobs.indices {
            let component = components.ofJob[position]
            weights[component] = saturatingAdd(weights[component], max(1, jobs[position].size ?? fill))
        }
        return weights
    }

    private static func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }

    /// FNV-1a over the UTF-8 bytes: the same on every machine (Swift's `Hasher` is seeded per process).
    static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// splitmix64's finaliser: spreads consecutive tries of one key over the shards.
    static func mix(_ value: UInt64) -> UInt64 {
        var x = value &+ 0x9e37_79b9_7f4a_7c15
        x = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
        x = (x ^ (x >> 27)) &* 0x94d0_49bb_1331_11eb
        return x ^ (x >> 31)
    }
}

/// The connected components of the dependency graph, taken as undirected.
private struct Components {
    /// Each job's component, numbered densely in manifest order of first appearance.
    var ofJob: [Int]
    /// Each component's key job: the one with the smallest id in UTF-8 order.
    var keys: [Int]

    init(jobs: [Job]) {
        // Only ids that some job depends on need a position: most jobs of a large manifest stand
        // alone, and a million-entry dictionary of every id cost a third of a second.
        var referenced: Set<String> = []
        for position in jobs.indices where !jobs[position].dependsOn.isEmpty || jobs[position].checksumsFrom != nil {
            referenced.formUnion(jobs[position].dependencies)
        }
        var positionOfID: [String: Int] = [:]
        positionOfID.reserveCapacity(referenced.count)
        if !referenced.isEmpty {
            for position in jobs.indices where positionOfID[jobs[position].id] == nil && referenced.contains(jobs[position].id) {
                positionOfID[jobs[position].id] = position
            }
        }
        var parent = Array(jobs.indices)
        func root(_ node: Int) -> Int {
            var node = node
            while parent[node] != node {
                parent[node] = parent[parent[node]]
                node = parent[node]
            }
            return node
        }
        for position in jobs.indices {
            for dependency in jobs[position].dependencies {
                guard let other = positionOfID[dependency] else { continue }
                let (a, b) = (root(position), root(other))
                if a != b { parent[max(a, b)] = min(a, b) }
            }
        }
        var numberOfRoot = [Int](repeating: -1, count: jobs.count)
        ofJob = []
        ofJob.reserveCapacity(jobs.count)
        keys = []
        for position in jobs.indices {
            let top = root(position)
            if numberOfRoot[top] < 0 {
                numberOfRoot[top] = keys.count
                keys.append(position)
            }
            let component = numberOfRoot[top]
            ofJob.append(component)
            if keys[component] != position && jobs[position].id.utf8.lexicographicallyPrecedes(jobs[keys[component]].id.utf8) {
                keys[component] = position
            }
        }
    }
}

extension Manifest {
    /// The manifest with only the jobs of `shard` (in manifest order), as `assignment` splits it.
    package func selecting(_ shard: Shard, of assignment: ShardAssignment) -> Manifest {
        precondition(assignment.count == shard.count, "the assignment is for \(assignment.count) shards")
        var selected = self
        selected.jobs = jobs.indices.filter { assignment.contains($0, in: shard) }.map { jobs[$0] }
        return selected
    }
}
