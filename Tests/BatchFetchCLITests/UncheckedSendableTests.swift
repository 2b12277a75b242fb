import Foundation
import Testing

/// Every `@unchecked Sendable` is a promise the compiler cannot check: their number in Sources/
/// is the one Docs/Architecture.md states ("Concurrency"), and no more than seven. A new one
/// fails here until the document says why it is needed.
@Suite struct UncheckedSendableTests {
    @Test func theCountIsTheDocumentedOne() throws {
        let sources = BinaryRunner.repository.appendingPathComponent("Sources")
        var found: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            for (number, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("@unchecked Sendable") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                found.append("\(file.lastPathComponent):\(number + 1)")
            }
        }
        let architecture = try String(contentsOf: BinaryRunner.repository.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
        let stated = try #require(architecture.firstMatch(of: /\(count: (\d+);/).flatMap { Int($0.1) })
        #expect(found.count == stated, "Sources: \(found.sorted()); Docs/Architecture.md says \(stated)")
        #expect(stated <= 7)
    }
}
