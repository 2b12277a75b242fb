import ArgumentParser
import BatchFetchEngine
import BatchFetchFiles
import BatchFetchSpec
#if os(Linux)
import CBatchFetchSystem
#endif
import Foundation

/// `batchfetch validate`: checks a manifest and reports every problem with its location.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a manifest and list every problem with file:line:column.",
        discussion: HelpText.reflowed("""
            Reads the manifest, expands ${VAR} references from the environment and checks every
            rule of manifest v1: keys, types, units, URLs, checksums, ids, dependencies and cycles,
            destinations. All problems are reported in one pass. Exits 0 when the manifest is
            valid, 2 when it is not or cannot be read.

            Examples:
              batchfetch validate datasets.yaml
              batchfetch validate --format json datasets.yaml | jq '.problems[].message'
            """)
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var manifest: ManifestArgument

    @Option(help: "Output format: text (diagnostics on stderr) or json (an object on stdout).", completion: .list(["text", "json"]))
    var format: Format = .text

    func run() throws {
        let result: Result<Manifest, ManifestLoadError>
        do {
            result = .success(try ManifestLoader().load(path: manifest.manifest))
        } catch {
            result = .failure(error)
        }
        switch format {
        case .text:
            switch result {
            case .success(let loaded):
                let graph = JobGraph(manifest: loaded)
                keepUntilExit(graph)
                print("\(manifest.manifest): valid (\(loaded.jobs.count) job\(loaded.jobs.count == 1 ? "" : "s"), "
                    + "\(graph.levelCount) level\(graph.levelCount == 1 ? "" : "s"))")
                Self.printHeapInUse(jobs: loaded.jobs.count)
            case .failure(let error):
                DiagnosticPrinter.print(error)
            }
        case .json:
            print(String(decoding: try StableJSON.encode(ValidationOutput(file: manifest.manifest, result: result)), as: UTF8.self))
        }
        if case .failure = result { throw CommandFailure(.invalid) }
    }
}

extension ValidateCommand {
    /// With `BATCHFETCH_HEAP_STATS=1` (for bench/scale-bench.py): the heap in use once the
    /// manifest is loaded and validated — what its jobs cost for the rest of a run, without the
    /// parser's and the validator's temporaries, which peak RSS counts.
    static func printHeapInUse(jobs: Int) {
        #if os(Linux)
        guard ProcessInfo.processInfo.environment["BATCHFETCH_HEAP_STATS"] == "1" else { return }
        let bytes = Int(batchfetch_heap_in_use())
        Console.error("heap in use after validation: \(bytes) bytes (\(jobs > 0 ? bytes / jobs : 0) per job)")
        #endif
    }
}

/// The `--format json` shape: `{"file", "valid", "jobs", "error", "problems": [...]}`.
struct ValidationOutput: Encodable {
    struct Problem: Encodable {
        var file: String
        var line: Int
        var column: Int
        var severity: String
        var message: String
    }

    var file: String
    var valid: Bool
    var jobs: Int?
    /// Set when the file could not be read at all.
    var error: String?
    var problems: [Problem]

    init(file: String, result: Result<Manifest, ManifestLoadError>) {
        self.file = file
        switch result {
        case .success(let manifest):
            valid = true
            jobs = manifest.jobs.count
            problems = []
        case .failure(.unreadable):
            valid = false
            if case .failure(let error) = result { self.error = error.description }
            problems = []
        case .failure(.invalid(let diagnostics)):
            valid = false
            problems = diagnostics.map {
                Problem(file: $0.file, line: $0.line, column: $0.column, severity: $0.severity.rawValue,
                        message: $0.message)
            }
        }
    }
}
