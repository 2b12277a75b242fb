@testable import BatchFetchSpec
import Foundation
import Testing

/// The version lives in one place, the repository's `VERSION` file: the constant the binary
/// prints and reports must say the same, and a development build names no commit.
@Suite struct ToolVersionTests {
    @Test func theConstantIsTheVersionFile() throws {
        let file = Fixtures.repository.appendingPathComponent("VERSION")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text == ToolVersion.current + "\n", "VERSION and ToolVersion.current differ: change both")
        // A Debian version and a file name: digits and dots, no leading 'v'.
        #expect(ToolVersion.current.allSatisfy { $0.isNumber || $0 == "." } && ToolVersion.current.first?.isNumber == true)
    }

    @Test func aDevelopmentBuildPrintsTheVersionAlone() {
        #expect(ToolVersion.commit == nil)
        #expect(ToolVersion.description == ToolVersion.current)
    }
}
