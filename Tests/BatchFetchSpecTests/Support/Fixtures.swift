import Foundation

/// Paths of the repository's test fixtures, found relative to this source file.
enum Fixtures {
    static let repository: URL = {
        // The directory above `Tests/`, wherever this file sits below it.
        var url = URL(fileURLWithPath: #filePath)
        while url.lastPathComponent != "Tests" { url.deleteLastPathComponent() }
        return url.deletingLastPathComponent()
    }()
    static let root = repository.appendingPathComponent("Tests/Fixtures")
    static let invalid = root.appendingPathComponent("invalid")
    /// Inputs that once crashed the loader (found by hand or by scripts/fuzz.sh).
    static let fuzz = root.appendingPathComponent("fuzz")
    static let examples = repository.appendingPathComponent("examples")

    /// The environment fixtures are validated with: fixed, so expectations do not depend on the
    /// machine running the tests.
    static let environment = ["NAME": "secret-name.bin", "DIR": "data"]

    /// A fresh empty directory under the system's temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("batchfetch-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
