import Foundation

/// A random number generator with a seed (SplitMix64), so that a randomized test draws the same
/// values on every run: a failure can be repeated, and a run cannot pass or fail by chance.
/// It lives beside the origin, the tests' other shared support. `BATCHFETCH_TEST_SEED` replaces
/// every test's own seed, to explore other draws on purpose.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = UInt64(ProcessInfo.processInfo.environment["BATCHFETCH_TEST_SEED"] ?? "") ?? seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
