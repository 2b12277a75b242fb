@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Crypto
import Foundation
import TestOrigin

/// A TestOrigin, a temporary output directory and a manifest: one integration test's world.
final class Harness: @unchecked Sendable {
    let origin: TestOrigin
    let directory: URL

    init() async throws {
        origin = try await TestOrigin.start()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Whether the transport under test streams whole bodies (backpressure) rather than asking
    /// for bounded ranges: `BATCHFETCH_TRANSPORT=nio` runs these tests on AsyncHTTPClient.
    let streams = TransportKind.default == .nio

    func close() async {
        try? await origin.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Loads manifest text (with `{origin}` replaced by the origin's base URL) and runs it.
    func run(_ yaml: String, options: RunOptions = RunOptions(), environment: [String: String] = [:]) async throws -> RunReport {
        try await start(yaml, options: options, environment: environment).report
    }

    /// Loads manifest text as ``run(_:options:environment:)`` does and starts it.
    func start(_ yaml: String, options: RunOptions = RunOptions(), environment: [String: String] = [:]) throws -> RunHandle {
        let manifest = try manifest(yaml, environment: environment)
        return Runner(manifest: manifest, options: self.options(options, for: manifest)).start()
    }

    /// Manifest text with `{origin}` replaced by the origin's base URL, loaded.
    func manifest(_ yaml: String, environment: [String: String] = [:]) throws -> Manifest {
        let text = yaml.replacingOccurrences(of: "{origin}", with: origin.url(""))
        return try ManifestLoader(environment: environment).load(
            bytes: Array(text.utf8), displayPath: "test.yaml", baseDirectory: directory.path)
    }

    /// `options` with the transport under test and a fixed manifest digest.
    func options(_ options: RunOptions = RunOptions(), for manifest: Manifest) -> RunOptions {
        var options = options
        options.manifestSHA256 = String(repeating: "0", count: 64)
        // The tests count requests and gate origins; those of hedging turn it on (MirrorsTests).
        if options.hedging == nil { options.hedging = false }
        if options.transport == nil, TransportKind.default == .urlsession {
            options.transport = URLSessionTransport.shared(maximumConnectionsPerHost: manifest.perHost, guardsBacklog: false)
        }
        return options
    }

    /// `check` (or `check --deep`) of manifest text, as ``run(_:options:environment:)`` runs it.
    func check(_ yaml: String, deep: Bool = false, environment: [String: String] = [:]) async throws -> RunReport {
        let manifest = try manifest(yaml, environment: environment)
        return await Checker(manifest: manifest, lock: nil, deep: deep, options: options(for: manifest)).run()
    }

    /// A single-job manifest for `path` with extra job keys. The idle timeout is a minute: a
    /// machine loaded by the whole suite and a CPU hog has starved a request for more than five
    /// seconds, and a retry it caused broke tests that count requests; tests of the timeout
    /// set their own.
    func single(_ path: String, dest: String = "out.bin", extra: String = "") -> String {
        """
        version: 1
        defaults: {retries: 2, backoff: 50ms, backoff_max: 200ms, timeout: 60s}
        jobs:
          - id: file
            url: {origin}\(path)
            dest: \(dest)
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: path(relative))
    }

    func sha256(ofFile relative: String) throws -> String {
        try Digester.digests(ofFile: path(relative)).digests["sha256"]!
    }

    static func sha256(_ content: OriginContent) -> String {
        var hasher = SHA256()
        var offset: Int64 = 0
        while offset < content.size {
            let end = min(content.size, offset + (4 << 20))
            hasher.update(data: content.bytes(in: offset..<end))
            offset = end
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
