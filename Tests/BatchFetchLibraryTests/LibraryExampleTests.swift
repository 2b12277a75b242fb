// README-EXAMPLE-BEGIN
import BatchFetchEngine
import BatchFetchSpec

/// Runs a manifest, printing each job as it finishes, and writes the report.
func fetchAll(manifestPath: String) async throws -> RunReport {
    let manifest = try ManifestLoader().load(path: manifestPath)
    let runner = Runner(manifest: manifest)
    let run = runner.start()
    for await event in run.events {
        switch event {
        case .jobFinished(let job):
            print("\(job.id): \(job.status.rawValue), \(job.bytesTransferred) bytes")
        case .progress(let progress):
            print("\(progress.finished)/\(progress.jobs) jobs, \(progress.transferred) bytes so far")
        default:
            break
        }
    }
    let report = await run.report
    try report.write(to: runner.defaultReportPath)
    return report
}
// README-EXAMPLE-END

import BatchFetchNetwork
import Foundation
import Testing
import TestOrigin

/// The library example in the README, compiled (above) and run here; the README must quote it
/// exactly. This target has no package access and no `@testable` import: it sees the engine as
/// a library user does, so what it compiles against is the public API (Docs/Architecture.md,
/// "Public API").
@Suite struct LibraryExampleTests {
    static let repository: URL = {
        // The directory above `Tests/`, wherever this file sits below it.
        var url = URL(fileURLWithPath: #filePath)
        while url.lastPathComponent != "Tests" { url.deleteLastPathComponent() }
        return url.deletingLastPathComponent()
    }()

    @Test func theReadmeExampleRunsAManifest() async throws {
        let world = try await World()
        world.origin.serve("/a.txt", .text("hello\n"))
        let manifest = world.path("m.yaml")
        try """
            version: 1
            jobs:
              - {id: a, url: "\(world.origin.url("/a.txt"))"}
            """.write(toFile: manifest, atomically: true, encoding: .utf8)
        let report = try await fetchAll(manifestPath: manifest)
        let written = FileManager.default.fileExists(atPath: world.path("batchfetch-report.json"))
        await world.close()
        #expect(report.status == .succeeded && report.jobs.first?.status == .downloaded)
        #expect(written)
    }

    @Test func theReadmeQuotesTheExampleExactly() throws {
        let source = try String(contentsOf: Self.repository.appendingPathComponent("Tests/BatchFetchLibraryTests/LibraryExampleTests.swift"), encoding: .utf8)
        let example = try #require(source.components(separatedBy: "// README-EXAMPLE-BEGIN\n").last?
            .components(separatedBy: "// README-EXAMPLE-END").first)
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```"))
    }

    @Test func eventsComeInOrderAndEndWithTheReport() async throws {
        let world = try await World()
        world.origin.serve("/a.txt", .text("a"))
        let manifest = try ManifestLoader(environment: [:]).load(
            bytes: Array("version: 1\njobs:\n  - {id: a, url: \"\(world.origin.url("/a.txt"))\"}\n".utf8),
            displayPath: "m.yaml", baseDirectory: world.directory.path)
        var options = RunOptions()
        options.concurrency = 2
        options.failFast = true
        let run = Runner(manifest: manifest, options: options).start()
        var kinds: [String] = []
        for await event in run.events {
            switch event {
            case .jobStarted(let id, _, _): kinds.append("started \(id)")
            case .jobFinished(let job): kinds.append("finished \(job.id) \(job.status.rawValue)")
            case .runFinished(let report): kinds.append("run \(report.status.rawValue)")
            case .progress, .warning: break
            }
        }
        let report = await run.report
        await world.close()
        #expect(kinds == ["started a", "finished a downloaded", "run succeeded"])
        #expect(report.summary.downloaded == 1)
    }
}

/// A custom transport through the public API alone (`RunOptions.transport`, as the README says):
/// every GET answers `hello`, with no socket.
@Suite struct CustomTransportTests {
    final class Hello: HTTPTransport {
        struct Task: TransportTask { func cancel() {} }

        func start(_ request: TransportRequest, handler: any TransportResponseHandler) -> any TransportTask {
            let body = Data("hello".utf8)
            DispatchQueue.global().async {
                guard handler.didReceiveHead(TransportResponseHead(status: 200, headers: ["Content-Length": "\(body.count)"])) else {
                    return handler.didComplete(nil)
                }
                handler.didReceiveBody(body)
                handler.didComplete(nil)
            }
            return Task()
        }
    }

    @Test func aRunUsesTheTransportItIsGiven() async throws {
        let world = try await World()
        let manifest = try ManifestLoader(environment: [:]).load(
            bytes: Array("version: 1\njobs:\n  - {id: a, url: \"http://example.invalid/a.txt\", size: 5}\n".utf8),
            displayPath: "m.yaml", baseDirectory: world.directory.path)
        var options = RunOptions()
        options.transport = Hello()
        options.durability = .none
        let report = await Runner(manifest: manifest, options: options).run()
        let written = try? String(contentsOfFile: world.path("a.txt"), encoding: .utf8)
        await world.close()
        #expect(report.jobs.first?.status == .downloaded)
        #expect(written == "hello")
    }
}

/// A TestOrigin and a temporary directory.
final class World: Sendable {
    let origin: TestOrigin
    let directory: URL

    init() async throws {
        origin = try await TestOrigin.start()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-library-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func close() async {
        try? await origin.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}
