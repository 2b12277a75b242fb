import BatchFetchEngine
import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// What `import` and `add` do with manifest text they made: validate it as `batchfetch
/// validate` would, and replace the file atomically only then.
enum ManifestEdit {
    /// Loads `text` as the manifest at `path` (stdout: the current directory) and prints every
    /// problem with the `# file:line` comment of the job it is in (exit 2); nothing is written.
    @discardableResult
    static func validate(_ text: String, as path: String?) throws -> Manifest {
        let displayPath = path ?? "<stdout>"
        let base = path.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path } ?? FileManager.default.currentDirectoryPath
        do {
            return try ManifestLoader().load(bytes: Array(text.utf8), displayPath: displayPath, baseDirectory: base)
        } catch {
            guard case .invalid(let diagnostics) = error else {
                DiagnosticPrinter.print(error)
                throw CommandFailure(.invalid)
            }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            for diagnostic in diagnostics {
                // The nearest `# origin` comment above the problem says which input line it came from.
                let origin = lines.prefix(diagnostic.location.line).last { $0.trimmingCharacters(in: .whitespaces).hasPrefix("# ") }
                Console.error("\(diagnostic.description)" + (origin.map { " (\($0.trimmingCharacters(in: .whitespaces).dropFirst(2)))" } ?? ""))
            }
            throw CommandFailure(.invalid, "batchfetch: error: the result does not validate; nothing written")
        }
    }

    /// Replaces `path` with `text` atomically (a temporary file beside it, then a rename).
    static func write(_ text: String, to path: String) throws {
        do {
            try SafeDirectory.writeAtomically(path: path, Data(text.utf8))
        } catch {
            throw CommandFailure(.jobsFailed, "batchfetch: error: cannot write \(path): \(error.localizedDescription)")
        }
    }
}
