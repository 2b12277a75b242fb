import BatchFetchSpec
import Foundation
import Testing

/// Every input that ever crashed the manifest loader (Tests/Fixtures/fuzz/, kept by
/// scripts/fuzz.sh) now loads to a manifest or to located diagnostics.
@Suite struct FuzzFixtureTests {
    static let inputs = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.fuzz.path).sorted()) ?? []

    @Test func thereAreInputsToReplay() {
        #expect(!Self.inputs.isEmpty)
    }

    @Test(arguments: inputs)
    func formerCrashLoadsOrIsDiagnosed(name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Fixtures.fuzz.appendingPathComponent(name)))
        let loaded = Result { () throws(ManifestLoadError) -> Manifest in
            try ManifestLoader(environment: Fixtures.environment).load(bytes: bytes, displayPath: name, baseDirectory: "/nonexistent")
        }
        switch loaded {
        case .success(let manifest):
            #expect(JobGraph(manifest: manifest).order.count == manifest.jobs.count)
        case .failure(.invalid(let diagnostics)):
            #expect(!diagnostics.isEmpty)
            #expect(diagnostics.allSatisfy { $0.location.line >= 1 && $0.location.column >= 1 })
        case .failure(.unreadable(_, let reason)):
            Issue.record("bytes reported unreadable: \(reason)")
        }
    }
}
