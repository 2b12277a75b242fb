// swift-tools-version:6.0
// The manifest loader's libFuzzer target, a package of its own so that the main package builds
// without the fuzzer's flags. Built and run by scripts/fuzz.sh (part of `make test`).
import PackageDescription

let package = Package(
    name: "batchfetch-fuzz",
    dependencies: [.package(name: "batchfetch", path: "..")],
    targets: [
        .executableTarget(
            name: "ManifestFuzz",
            dependencies: [.product(name: "BatchFetchSpec", package: "batchfetch")]
        ),
    ]
)
