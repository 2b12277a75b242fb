@testable import BatchFetchNetwork
import Foundation

/// Waits for an event of another process or server (a request at the origin, bytes on disk):
/// true once `condition` holds, false if it never did within `seconds` — a bound for a hung
/// test, not a timing assertion.
func eventually(within seconds: Double = 120, _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
