import Dispatch

/// `transform` of `0..<count` on all cores, results in order; for the few large, independent
/// steps of loading a big manifest (its pieces, its groups of cross-job checks).
func concurrentMap<T>(_ count: Int, _ transform: @Sendable (Int) -> T) -> [T] {
    [T](unsafeUninitializedCapacity: count) { buffer, initialized in
        nonisolated(unsafe) let output = buffer
        DispatchQueue.concurrentPerform(iterations: count) { index in
            (output.baseAddress! + index).initialize(to: transform(index))
        }
        initialized = count
    }
}
