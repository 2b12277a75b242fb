import BatchFetchNetwork
import BatchFetchSpec
import NIOConcurrencyHelpers

/// A run's budget as it is spent: the thin driver of ``RunBudget``'s rule. It holds the run's
/// start on the injected clock and the run's byte count, and remembers the first budget spent.
///
/// A soft cutoff needs no timer: jobs start only when the run begins or a job finishes, and
/// ``check()`` is asked then. A hard cutoff acts the moment the budget is spent — the byte
/// count calls in when it reaches `max_bytes`, a sleep on the clock ends at `max_duration` — and
/// interrupts the run as SIGTERM would, its partials kept (Docs/Contracts.md, exit 5).
final class BudgetWatch: Sendable {
    let budget: RunBudget
    /// Bytes every job of the run transferred (bodies received, files uploaded).
    let bytes: RunBytes
    private let time: any TimeSource
    private let start: ContinuousClock.Instant
    private let interruption: Interruption
    private let spentReason = NIOLockedValueBox<RunBudget.Reason?>(nil)
    private let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)

    init(_ budget: RunBudget, time: any TimeSource, interruption: Interruption) {
        self.budget = budget
        self.time = time
        self.interruption = interruption
        start = time.now
        let spent = spentReason
        let hard = budget.cutoff == .hard
        bytes = RunBytes(limit: budget.maxBytes) {
            if Self.spend(.maxBytes, in: spent), hard { interruption.interrupt() }
        }
        if hard, let seconds = budget.maxDuration {
            timer.withLockedValue {
                $0 = Task { [time] in
                    await time.sleep(for: .seconds(seconds))
                    if !Task.isCancelled, Self.spend(.maxDuration, in: spent) { interruption.interrupt() }
                }
            }
        }
    }

    /// The budget spent by now, if any (remembered: a budget once spent stays spent).
    func check() -> RunBudget.Reason? {
        if let reason = spentReason.withLockedValue({ $0 }) { return reason }
        let elapsed = (time.now - start).inSeconds
        guard let reason = budget.spent(elapsed: elapsed, bytes: bytes.total) else { return nil }
        if Self.spend(reason, in: spentReason), budget.cutoff == .hard { interruption.interrupt() }
        return spentReason.withLockedValue { $0 }
    }

    /// The budget that interrupted the run's transfers (a hard cutoff), if any: their
    /// `interrupted` results are `deferred`.
    var cut: RunBudget.Reason? {
        budget.cutoff == .hard ? spentReason.withLockedValue { $0 } : nil
    }

    /// The run is over: the duration's timer goes.
    func finish() {
        timer.withLockedValue { $0?.cancel() }
    }

    /// Records `reason` as the budget spent unless one already is; true when it is the first.
    private static func spend(_ reason: RunBudget.Reason, in box: NIOLockedValueBox<RunBudget.Reason?>) -> Bool {
        box.withLockedValue { spent in
            guard spent == nil else { return false }
            spent = reason
            return true
        }
    }
}
