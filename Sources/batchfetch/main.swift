import BatchFetchCLI
import Foundation

#if os(Linux)
/// glibc's mallopt(3); Swift's Glibc module does not import malloc.h.
@_silgen_name("mallopt")
private func mallopt(_ parameter: Int32, _ value: Int32) -> Int32

// One malloc arena: URLSession allocates every 16 KiB body chunk on whichever thread libcurl
// runs, and glibc's per-thread arenas then keep tens of MiB of freed chunks resident (a 1 GiB
// download with 4 segments peaked at 107 MiB RSS with the default, 70 MiB with one arena, at the
// same speed; with 8 segments 63 MiB with one arena, 67 MiB with two). Set before any thread
// starts. -8 is M_ARENA_MAX. `validate` and `plan` transfer nothing and keep an arena per thread:
// a large manifest is parsed on every core, and with one arena the cores wait for each other's
// malloc (a million jobs: 13.9 s with one arena, 12.4 s with one per thread).
if !["validate", "plan"].contains(CommandLine.arguments.dropFirst().first) {
    _ = mallopt(-8, 1)
}
#endif

exit(await BatchFetchMain.run(arguments: Array(CommandLine.arguments.dropFirst())))
