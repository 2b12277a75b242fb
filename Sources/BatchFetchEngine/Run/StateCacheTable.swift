extension StateCache {
    /// The cache's entries by dest: the entries packed in one array, and a dictionary from dest
    /// to position.
    ///
    /// Why not `[String: Held]`: a dictionary keeps a quarter or more of its buckets empty
    /// (rounded up to a power of two), each the size of a key and an entry, 184 bytes, which made
    /// it a run's largest allocation. Here only the index has spare buckets, of 24 bytes, and
    /// the entries are packed (bench/results/history.md).
    struct Table: Equatable {
        private var positions: [String: Int]
        private var entries: [Held] = []

        /// An empty table with room for `capacity` entries.
        init(capacity: Int = 0) {
            positions = Dictionary(minimumCapacity: capacity)
            entries.reserveCapacity(capacity)
        }

        init(_ files: [String: Held]) {
            self.init(capacity: files.count)
            for (dest, held) in files { set(held, for: dest) }
        }

        var count: Int { entries.count }

        var isEmpty: Bool { entries.isEmpty }

        /// The dests that have an entry, in no particular order.
        var dests: Dictionary<String, Int>.Keys { positions.keys }

        subscript(dest: String) -> Held? {
            positions[dest].map { entries[$0] }
        }

        /// Makes `held` the entry of `dest`; false when it already was.
        @discardableResult
        mutating func set(_ held: Held, for dest: String) -> Bool {
            guard let position = positions[dest] else {
                positions[dest] = entries.count
                entries.append(held)
                return true
            }
            guard entries[position] != held else { return false }
            entries[position] = held
            return true
        }

        mutating func reserveCapacity(_ capacity: Int) {
            positions.reserveCapacity(capacity)
            entries.reserveCapacity(capacity)
        }

        /// The same dests with the same entries, however they were added.
        static func == (left: Table, right: Table) -> Bool {
            left.count == right.count && left.positions.allSatisfy { right[$0.key] == left.entries[$0.value] }
        }
    }
}
