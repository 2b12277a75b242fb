// swift-tools-version:6.0
// A measurement, not part of batchfetch: how fast a SwiftNIO (AsyncHTTPClient) transport could
// fetch, write and hash one file on this machine, to compare with URLSession's numbers in
// bench/results/downloads.md. Built and run by bench/nio-probe.sh.
import PackageDescription

let package = Package(
    name: "nio-probe",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.65.0"),
    ],
    targets: [
        .executableTarget(name: "nio-probe", dependencies: [
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
    ]
)
