import BatchFetchCLI
#if os(Linux)
import CBatchFetchSystem
#endif
import Foundation

#if os(Linux)
// One malloc arena: URLSession allocates every body chunk on whichever thread libcurl runs, and
// glibc's per-thread arenas then keep tens of MiB of freed chunks resident; one arena keeps a
// large segmented download's memory down at the same speed (bench/results/history.md). Set before
// any thread starts. `validate` and `plan` transfer nothing and keep an arena per thread: a large
// manifest is parsed on every core, and with one arena the cores wait for each other's malloc.
if !["validate", "plan"].contains(CommandLine.arguments.dropFirst().first) {
    _ = batchfetch_set_arena_max(1)
}
#endif

exit(await BatchFetchMain.run(arguments: Array(CommandLine.arguments.dropFirst())))
