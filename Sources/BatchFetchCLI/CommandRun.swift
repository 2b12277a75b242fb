import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// The step every command that runs jobs takes around its run — `run`, `pin`, `add --pin`: the
/// output directory's run lock held throughout, and the run's events shown on stderr until it
/// ends. Written once so that the three hold the lock, print and wait alike; what a command
/// says or exits with afterwards is a ``CommandFailure`` (``ExitStatus/ending(_:)``).
enum CommandRun {
    /// Runs `body` holding the run lock of `directory` (Docs/Contracts.md §1: exit 4 when another
    /// run holds it and `wait` is false).
    static func holdingLock<T>(_ directory: String, shard: Shard? = nil, wait: Bool = false,
                               _ body: () async throws -> T) async throws -> T {
        let lock = try RunLockOption.acquire(directory, shard: shard, wait: wait)
        defer { withExtendedLifetime(lock) {} }
        return try await body()
    }

    /// Shows `run`'s events on stderr (`mode` nil: a bar on a terminal, else lines), and writes
    /// them to `writer` too, until the run ends.
    ///
    /// The events are handled on the run's scheduler thread (an event loop for a batch of small
    /// files: no thread woken per event) only when writing them never waits: a full pipe or a
    /// stopped terminal would hold the loop, and its transfers would time out.
    static func follow(_ run: RunHandle, mode: ProgressPrinter.Mode? = nil, listsUpToDate: Bool = false,
                       writer: EventWriter? = nil) async {
        let printer = ProgressPrinter(mode: mode ?? (isatty(STDERR_FILENO) != 0 ? .bar : .line),
                                      listsUpToDate: listsUpToDate) { Console.errorText($0) }
        let neverWait = Console.writesNeverWait(STDERR_FILENO) && (writer?.neverWaits ?? true)
        await withTaskExecutorPreference(neverWait ? run.executor : nil) {
            for await event in run.events {
                printer.handle(event)
                writer?.handle(event)
            }
        }
        printer.finish()
    }
}
