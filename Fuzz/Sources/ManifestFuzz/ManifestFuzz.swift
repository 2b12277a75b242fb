import BatchFetchSpec

/// One input: any byte string must load to a manifest (then a job graph) or to diagnostics —
/// never a crash, a hang or unbounded memory (libFuzzer's `-timeout` and `-rss_limit_mb` enforce
/// the bounds). A few variables are set so `${VAR}` expansion is exercised. Loading in pieces
/// (as large files are, here forced on every input) must give exactly what loading whole gives.
func loadManifest(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    var loader = ManifestLoader(environment: ["TOKEN": "fuzz-token", "HOST": "h.example", "EMPTY": ""])
    loader.pieceCount = 1
    let whole = outcome(loader, bytes)
    loader.minimumPieceSize = 0
    loader.pieceCount = 3
    let pieces = outcome(loader, bytes)
    if pieces != whole {
        fatalError("loading in pieces differs from loading whole:\n--- whole\n\(whole)\n--- pieces\n\(pieces)")
    }
    return 0
}

/// The loaded manifest, printed field by field, or the diagnostics.
private func outcome(_ loader: ManifestLoader, _ bytes: [UInt8]) -> String {
    do {
        let manifest = try loader.load(bytes: bytes, displayPath: "fuzz.yaml", baseDirectory: "/nonexistent/fuzz")
        _ = JobGraph(manifest: manifest).order.count
        var printed = ""
        dump(manifest, to: &printed)
        return printed
    } catch {
        return error.description
    }
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
