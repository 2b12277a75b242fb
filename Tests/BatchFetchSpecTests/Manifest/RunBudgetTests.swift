@testable import BatchFetchSpec
import Testing

/// `max_duration`, `max_bytes` and `cutoff`: the rule that says a budget is spent, and how the
/// manifest and the flags give it.
@Suite struct RunBudgetTests {
    @Test func aBudgetIsSpentOnceItsLimitIsReached() {
        let budget = RunBudget(maxDuration: 60, maxBytes: 1000)
        #expect(budget.spent(elapsed: 59.9, bytes: 999) == nil)
        // A soft max_bytes lets a job start while the bytes so far are under it.
        #expect(budget.spent(elapsed: 0, bytes: 1000) == .maxBytes)
        #expect(budget.spent(elapsed: 60, bytes: 0) == .maxDuration)
        #expect(budget.spent(elapsed: 61, bytes: 5000) == .maxDuration)
        #expect(RunBudget().spent(elapsed: 1e9, bytes: .max) == nil)
    }

    @Test func theFlagsWinLimitByLimit() {
        let manifest = RunBudget(maxDuration: 3600, maxBytes: 1 << 30, cutoff: .hard)
        let flags = RunBudget(maxDuration: 60)
        #expect(manifest.overridden(by: flags, cutoffGiven: false) == RunBudget(maxDuration: 60, maxBytes: 1 << 30, cutoff: .hard))
        #expect(manifest.overridden(by: RunBudget(cutoff: .soft), cutoffGiven: true).cutoff == .soft)
    }

    @Test func theManifestGivesTheBudget() throws {
        let text = "version: 1\nmax_duration: 6h\nmax_bytes: 2GiB\ncutoff: hard\njobs:\n  - {id: a, url: 'https://h/a'}\n"
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        #expect(manifest.budget == RunBudget(maxDuration: 6 * 3600, maxBytes: 2 << 30, cutoff: .hard))
    }
}
