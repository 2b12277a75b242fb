import BatchFetchSpec

/// Prints manifest problems the way compilers do: `file:line:col: error: message`, one per line,
/// then a count, on stderr.
enum DiagnosticPrinter {
    static func print(_ error: ManifestLoadError) {
        switch error {
        case .unreadable:
            Console.error("batchfetch: error: \(error)")
        case .invalid(let diagnostics):
            for diagnostic in diagnostics { Console.error(diagnostic.description) }
            let count = diagnostics.filter { $0.severity == .error }.count
            // The manifest and any of its job lists that have problems, in the order printed.
            var files: [String] = []
            for diagnostic in diagnostics where !files.contains(diagnostic.file) { files.append(diagnostic.file) }
            Console.error("\(count) error\(count == 1 ? "" : "s") in \(files.isEmpty ? "manifest" : files.joined(separator: ", "))")
        }
    }
}
