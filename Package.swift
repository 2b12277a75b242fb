// swift-tools-version:6.0
import Foundation
import PackageDescription

/// `BATCHFETCH_STRICT=1` (set by `.ci/run`) builds our own targets with warnings as errors, so a
/// warning cannot land; dependencies keep their warnings.
let strict: [SwiftSetting] = ProcessInfo.processInfo.environment["BATCHFETCH_STRICT"] == "1"
    ? [.unsafeFlags(["-warnings-as-errors"])] : []

let package = Package(
    name: "batchfetch",
    // macOS 15: small jobs run on SwiftNIO's event loops through a `TaskExecutor` (Swift 6.0's
    // task executor preference, macOS 15 and later; Docs/Architecture.md, "Lanes").
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "batchfetch", targets: ["batchfetch"]),
        .library(name: "BatchFetchSpec", targets: ["BatchFetchSpec"]),
        .library(name: "BatchFetchEngine", targets: ["BatchFetchEngine"]),
        // The floors' public types a library user may name: `BatchFetchError` and `Durability`;
        // `HTTPTransport` and its request and handler, for a transport of one's own.
        .library(name: "BatchFetchFiles", targets: ["BatchFetchFiles"]),
        .library(name: "BatchFetchNetwork", targets: ["BatchFetchNetwork"]),
        .library(name: "TestOrigin", targets: ["TestOrigin"]),
        .executable(name: "batchfetch-test-origin", targets: ["batchfetch-test-origin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.0"),
        // The state store (SQLite; Docs/StateStore.md).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // RFC 9651 structured fields: the rate-limit headers (Policy/RateLimitHint.swift).
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.7.0"),
        // The Prometheus text of `--metrics` (Report/RunMetrics.swift).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
    ],
    targets: [
        // libyaml through the system's headers and library (Debian: libyaml-dev).
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"]), .brew(["libyaml"])]
        ),
        // libarchive through the system's headers and library (Debian: libarchive-dev): `extract:`.
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]
        ),
        // libsodium through the system's headers and library (Debian: libsodium-dev): BLAKE2b-512
        // for minisign's prehashed signatures (Docs/Signatures.md).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // C calls the Glibc module does not import (syncfs, mallopt), as functions of our own.
        .systemLibrary(name: "CBatchFetchSystem"),
        // Manifest model, YAML node tree, decoding, validation and the job graph. No networking.
        .target(name: "BatchFetchSpec", dependencies: ["CYAML"], swiftSettings: strict),
        // The engine's floors, as swift-nio's NIOCore → NIOPosix → NIOHTTP1: each target sees
        // only the floors below it, so the compiler keeps the layering (Docs/Architecture.md,
        // "Floors").
        // Files on disk: the safe directory, parts and sidecars, the file sink, digests, file
        // identity; the error every subsystem reports. No networking, no run.
        .target(
            name: "BatchFetchFiles",
            dependencies: [
                "BatchFetchSpec",
                "CBatchFetchSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Object stores: SigV4 signing, AWS configuration, S3's XML answers and bucket listings.
        // Pure values and parsing: no transport, no files beyond the AWS config it reads.
        .target(
            name: "BatchFetchObjectStore",
            dependencies: [
                "BatchFetchSpec",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The network: both transports (AsyncHTTPClient, URLSession), one request's exchange
        // with its watchdog, host and rate limits, the attempt core's pure policies (response
        // classes, verdicts, retries, redirects, credentials) and each job's network. Sends
        // requests; knows nothing of jobs' files, runs or reports.
        .target(
            name: "BatchFetchNetwork",
            dependencies: [
                "BatchFetchSpec",
                "BatchFetchFiles",
                "BatchFetchObjectStore",
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // The state store (SQLite through GRDB; Docs/StateStore.md): each dest's identity,
        // digests and validators, extracted trees, multipart uploads. Over the file floor only:
        // it records what the floors above decide.
        .target(
            name: "BatchFetchState",
            dependencies: [
                "BatchFetchSpec",
                "BatchFetchFiles",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Downloads (state machine, segments, the sink's driver), archives, the cache, uploads,
        // the runner, reports, check/pin/verify: everything above the floors.
        .target(
            name: "BatchFetchEngine",
            dependencies: [
                "BatchFetchSpec",
                "BatchFetchFiles",
                "BatchFetchObjectStore",
                "BatchFetchNetwork",
                "BatchFetchState",
                "CArchive",
                "CBatchFetchSystem",
                "CSodium",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        // A SwiftNIO HTTP/1.1 origin with switchable faults, for tests, the demo and benchmarks;
        // and the tests' way to run programs without holding Swift's cooperative pool
        // (OffThePool, SpawnedProcess).
        .target(
            name: "TestOrigin",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "batchfetch-test-origin",
            dependencies: ["TestOrigin", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            swiftSettings: strict
        ),
        // Subcommands, diagnostics printing and plan rendering.
        .target(
            name: "BatchFetchCLI",
            dependencies: [
                "BatchFetchSpec",
                "BatchFetchFiles",
                "BatchFetchNetwork",
                "BatchFetchEngine",
                "CBatchFetchSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "batchfetch", dependencies: ["BatchFetchCLI", "CBatchFetchSystem"], swiftSettings: strict),
        .testTarget(name: "BatchFetchSpecTests", dependencies: ["BatchFetchSpec", "TestOrigin"], swiftSettings: strict),
        .testTarget(
            name: "BatchFetchEngineTests",
            dependencies: ["BatchFetchEngine", "BatchFetchFiles", "BatchFetchObjectStore", "BatchFetchNetwork", "BatchFetchState",
                           "TestOrigin",
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The README's library example as a library user compiles it: no package access, no
        // `@testable`, so it sees only the public API.
        .testTarget(
            name: "BatchFetchLibraryTests",
            dependencies: ["BatchFetchEngine", "BatchFetchNetwork", "BatchFetchSpec", "TestOrigin"],
            packageAccess: false,
            swiftSettings: strict
        ),
        .testTarget(
            name: "BatchFetchCLITests",
            dependencies: ["BatchFetchCLI", "BatchFetchNetwork", "batchfetch", "batchfetch-test-origin", "TestOrigin",
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
    ]
)
