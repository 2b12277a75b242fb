/// Keeps `value` alive until the process exits, on purpose.
///
/// `validate` and `plan` print and exit; releasing what they loaded first only costs time:
/// freeing a million jobs' strings one allocation at a time takes long (bench/results/history.md), while the exit right
/// after returns all memory at once (compilers skip their frees the same way). Commands that go
/// on working, such as a shard's run, release the whole manifest as soon as they can instead.
func keepUntilExit<T>(_ value: T) {
    _ = Unmanaged.passRetained(Kept(value))
}

private final class Kept<T> {
    let value: T

    init(_ value: T) {
        self.value = value
    }
}
