// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "batchfetch",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "batchfetch", targets: ["batchfetch"]),
        .library(name: "BatchFetchSpec", targets: ["BatchFetchSpec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // libyaml through the system's headers and library (Debian: libyaml-dev).
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"]), .brew(["libyaml"])]
        ),
        // Manifest model, YAML node tree, decoding, validation and the job graph. No networking.
        .target(name: "BatchFetchSpec", dependencies: ["CYAML"]),
        // Subcommands, diagnostics printing and plan rendering.
        .target(
            name: "BatchFetchCLI",
            dependencies: [
                "BatchFetchSpec",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "batchfetch", dependencies: ["BatchFetchCLI"]),
        .testTarget(name: "BatchFetchSpecTests", dependencies: ["BatchFetchSpec"]),
        .testTarget(
            name: "BatchFetchCLITests",
            dependencies: ["BatchFetchCLI", "batchfetch"]
        ),
    ]
)
