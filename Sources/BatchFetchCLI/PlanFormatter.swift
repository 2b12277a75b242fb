import BatchFetchSpec

/// Renders a ``Plan`` as text, JSON or Graphviz dot. Every URL is shown redacted.
enum PlanFormatter {
    static func text(_ plan: Plan) -> String {
        let manifest = plan.manifest
        let levels = plan.graph.levelCount
        var out = "plan for \(manifest.path): \(manifest.jobs.count) job\(manifest.jobs.count == 1 ? "" : "s") "
            + "in \(levels) level\(levels == 1 ? "" : "s"), output_dir \(manifest.outputDirectory)\n"
        var currentLevel = -1
        for step in plan.steps {
            if step.level != currentLevel {
                currentLevel = step.level
                out += "level \(currentLevel):\n"
            }
            let job = step.job
            out += "  \(job.id) -> \(job.dest.redacted)  [\(describe(step.local))]\n"
            for (index, url) in job.urls.enumerated() {
                out += job.urls.count == 1 ? "      url      \(url.redacted)\n" : "      mirror \(index + 1) \(url.redacted)\n"
            }
            if let size = job.size { out += "      size     \(size) bytes\n" }
            for checksum in job.checksums { out += "      checksum \(checksum)\n" }
            if let from = job.checksumsFrom { out += "      checksum from the sum file of '\(from)'\n" }
            if !job.dependencies.isEmpty { out += "      after    \(job.dependencies.joined(separator: ", "))\n" }
        }
        return out
    }

    static func describe(_ state: Plan.LocalState) -> String {
        switch state {
        case .missing: return "missing"
        case .partial(let bytes): return "partial: \(bytes) bytes in .part"
        case .present(let bytes, nil): return "exists: \(bytes) bytes"
        case .present(let bytes, true?): return "exists: \(bytes) bytes, size matches"
        case .present(let bytes, false?): return "exists: \(bytes) bytes, size differs"
        }
    }

    static func dot(_ plan: Plan) -> String {
        var out = "digraph batchfetch {\n  rankdir=LR;\n  node [shape=box];\n"
        for step in plan.steps {
            out += "  \(quoted(step.job.id)) [label=\(quoted("\(step.job.id)\\n\(step.job.dest.redacted)"))];\n"
        }
        for step in plan.steps {
            for dependency in step.job.dependencies {
                out += "  \(quoted(dependency)) -> \(quoted(step.job.id));\n"
            }
        }
        return out + "}\n"
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The `--format json` shape.
    struct PlanOutput: Encodable {
        struct Local: Encodable {
            var state: String
            var bytes: Int64?
            var size_matches: Bool?
        }

        struct Step: Encodable {
            var id: String
            var level: Int
            var urls: [String]
            var dest: String
            var path: String
            var size: Int64?
            var checksums: [String: String]
            var checksums_from: String?
            var depends_on: [String]
            var local: Local
        }

        var manifest: String
        var output_dir: String
        var jobs: Int
        var levels: Int
        var order: [Step]

        init(_ plan: Plan) {
            manifest = plan.manifest.path
            output_dir = plan.manifest.outputDirectory
            jobs = plan.manifest.jobs.count
            levels = plan.graph.levelCount
            order = plan.steps.map { step in
                let job = step.job
                let local: Local
                switch step.local {
                case .missing: local = Local(state: "missing")
                case .partial(let bytes): local = Local(state: "partial", bytes: bytes)
                case .present(let bytes, let matches): local = Local(state: "exists", bytes: bytes, size_matches: matches)
                }
                return Step(
                    id: job.id, level: step.level, urls: job.urls.map(\.redacted), dest: job.dest.redacted,
                    path: step.job.dest.hasSecrets ? plan.manifest.outputDirectory + "/" + job.dest.redacted : step.path,
                    size: job.size,
                    checksums: Dictionary(job.checksums.map { ($0.algorithm.rawValue, $0.hex) }, uniquingKeysWith: { a, _ in a }),
                    checksums_from: job.checksumsFrom, depends_on: job.dependencies, local: local)
            }
        }
    }
}
