import BatchFetchSpec

/// One input: any byte string must load to a manifest (then a job graph) or to diagnostics —
/// never a crash, a hang or unbounded memory (libFuzzer's `-timeout` and `-rss_limit_mb` enforce
/// the bounds). A few variables are set so `${VAR}` expansion is exercised.
func loadManifest(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let loader = ManifestLoader(environment: ["TOKEN": "fuzz-token", "HOST": "h.example", "EMPTY": ""])
    if let manifest = try? loader.load(bytes: bytes, displayPath: "fuzz.yaml", baseDirectory: "/nonexistent/fuzz") {
        _ = JobGraph(manifest: manifest).order.count
    }
    return 0
}

/// libFuzzer's entry for one input (its objects refer to it by this name).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    loadManifest(data, count)
}

/// libFuzzer's driver, from the toolchain's `libclang_rt.fuzzer`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The executable's entry. SwiftPM links an executable target's entry as `<module>_main`, which
/// keeps libFuzzer's own `main` out; so this one hands the command line to libFuzzer's driver.
@_cdecl("ManifestFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&count, &arguments, fuzzOneInput)
}
