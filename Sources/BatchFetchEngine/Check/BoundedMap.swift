/// `body(0..<count)` with at most `limit` calls running at once; results in index order. Used
/// by `check` and `pin` (the manifest's concurrency) and `verify` (a hash per core).
func boundedMap<T: Sendable>(_ count: Int, limit: Int, _ body: @escaping @Sendable (Int) async -> T) async -> [T] {
    var results = [T?](repeating: nil, count: count)
    await withTaskGroup(of: (Int, T).self) { group in
        var next = 0
        func launch() {
            guard next < count else { return }
            let index = next
            next += 1
            group.addTask { (index, await body(index)) }
        }
        for _ in 0..<max(1, limit) { launch() }
        while let (index, result) = await group.next() {
            results[index] = result
            launch()
        }
    }
    return results.map { $0! }
}
