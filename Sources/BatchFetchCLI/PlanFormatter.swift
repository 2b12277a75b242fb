import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// Renders a ``Plan`` as text, JSON or Graphviz dot, streaming to the output. Every URL and path
/// is shown redacted. With a content cache, each download says whether the cache holds its
/// content (``ContentCache/serves(_:locked:)``): a run would publish it from there unless `dest`
/// is already up to date.
enum PlanFormatter {
    /// The run's content cache, looked at only, and the lockfile's sha256 of a job (`--locked`).
    struct CacheLookup {
        var cache: ContentCache
        var lock: LockFile?

        func serves(_ job: Job) -> Bool {
            cache.serves(job, locked: lock?.jobs[job.id]?.sha256)
        }
    }

    static func text(_ plan: Plan, shard: ShardScope?, cache: CacheLookup?, to out: inout BufferedOutput) {
        let manifest = plan.manifest
        let levels = plan.graph.levelCount
        let scope = shard.map { " (shard \($0.shard) of \($0.manifestJobs) jobs)" } ?? ""
        out.write("plan for \(manifest.path)\(scope): \(manifest.jobs.count) job\(manifest.jobs.count == 1 ? "" : "s") "
            + "in \(levels) level\(levels == 1 ? "" : "s"), output_dir \(manifest.outputDirectory)"
            + (cache.map { ", cache \($0.cache.path)" } ?? "") + "\n")
        var currentLevel = -1
        for step in plan.steps {
            if step.level != currentLevel {
                currentLevel = step.level
                out.write("level \(currentLevel):\n")
            }
            let job = plan.job(step)
            if let upload = job.upload {
                out.write("  \(job.id) sends \(job.dest.redacted)  [\(describe(step.local))]\n")
                let form = upload.form.map { " (multipart form, file field '\($0.fileField)')" } ?? ""
                out.write("      \(job.method.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(job.url?.redacted ?? "")\(form)\n")
                if !job.dependencies.isEmpty { out.write("      after    \(job.dependencies.joined(separator: ", "))\n") }
                continue
            }
            let cached = cache?.serves(job) == true ? "; in the cache" : ""
            out.write("  \(job.id) -> \(job.dest.redacted)  [\(describe(step.local))\(cached)]\n")
            for (index, url) in job.urls.enumerated() {
                out.write(job.urls.count == 1 ? "      url      \(url.redacted)\n" : "      mirror \(index + 1) \(url.redacted)\n")
            }
            if let size = job.size { out.write("      size     \(size) bytes\n") }
            for checksum in job.checksums { out.write("      checksum \(checksum)\n") }
            if let from = job.checksumsFrom { out.write("      checksum from the sum file of '\(from)'\n") }
            if let extract = job.extract {
                out.write("      extract  into \(extract.into.redacted)" + (extract.format == .auto ? "" : " (\(extract.format.rawValue))")
                    + (extract.keepArchive ? "" : ", archive removed once unpacked") + "\n")
            }
            if !job.dependencies.isEmpty { out.write("      after    \(job.dependencies.joined(separator: ", "))\n") }
        }
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

    static func dot(_ plan: Plan, to out: inout BufferedOutput) {
        out.write("digraph batchfetch {\n  rankdir=LR;\n  node [shape=box];\n")
        for step in plan.steps {
            let job = plan.job(step)
            let label = job.isUpload ? "\(job.id)\\n\(job.method.rawValue) \(job.dest.redacted)" : "\(job.id)\\n\(job.dest.redacted)"
            out.write("  \(quoted(job.id)) [label=\(quoted(label))];\n")
        }
        for step in plan.steps {
            let job = plan.job(step)
            for dependency in job.dependencies {
                out.write("  \(quoted(dependency)) -> \(quoted(job.id));\n")
            }
        }
        out.write("}\n")
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The `--format json` shape: an object whose `order` array holds one compact object per job,
    /// one per line, keys sorted. Written as it goes, so the output streams in bounded memory.
    static func json(_ plan: Plan, shard: ShardScope?, cache: CacheLookup?, to out: inout BufferedOutput) {
        let manifest = plan.manifest
        out.write("{\n")
        if let cache { out.write("  \"cache\": \(JSONText.quoted(cache.cache.path)),\n") }
        out.write("  \"jobs\": \(manifest.jobs.count),\n  \"levels\": \(plan.graph.levelCount),\n")
        out.write("  \"manifest\": \(JSONText.quoted(manifest.path)),\n")
        out.write("  \"order\": [")
        for (position, step) in plan.steps.enumerated() {
            out.write(position == 0 ? "\n    " : ",\n    ")
            out.write(stepJSON(plan, step, cache: cache))
        }
        out.write(plan.steps.isEmpty ? "],\n" : "\n  ],\n")
        out.write("  \"output_dir\": \(JSONText.quoted(manifest.outputDirectory))")
        if let shard {
            out.write(",\n  \"shard\": " + JSONText.object([
                ("index", "\(shard.shard.index)"), ("count", "\(shard.shard.count)"), ("manifest_jobs", "\(shard.manifestJobs)")]))
        }
        out.write("\n}\n")
    }

    /// `plan --shards N`: what each shard of an N-way split would hold, and how even it is.
    static func shardsText(_ assignment: ShardAssignment, manifest: Manifest, to out: inout BufferedOutput) {
        let declared = assignment.totals.reduce(Int64(0)) { $0 + $1.bytes }
        let unsized = assignment.totals.reduce(0) { $0 + $1.unsizedJobs }
        out.write("\(assignment.count) shard\(assignment.count == 1 ? "" : "s") for \(manifest.path): \(manifest.jobs.count) jobs, "
            + "\(ByteFormat.bytes(declared)) declared\(unsized > 0 ? ", \(unsized) jobs without size" : "")\n")
        let rows = assignment.totals.enumerated().map { index, total in
            ["\(index)/\(assignment.count)", "\(total.jobs)", "\(total.components)", ByteFormat.bytes(total.bytes),
             "\(total.unsizedJobs)", "\(total.largestComponent)"]
        }
        let header = ["shard", "jobs", "components", "declared", "without size", "largest component (jobs)"]
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max()! }
        for row in [header] + rows {
            out.write(row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
            }.joined() + "\n")
        }
        let heaviest = assignment.totals.map(\.bytes).max() ?? 0
        if declared > 0 {
            out.write(String(format: "the fullest shard holds %.2f× an even share of the declared bytes\n",
                             Double(heaviest) * Double(assignment.count) / Double(declared)))
        }
    }

    static func shardsJSON(_ assignment: ShardAssignment, manifest: Manifest, to out: inout BufferedOutput) {
        out.write("{\n  \"jobs\": \(manifest.jobs.count),\n  \"manifest\": \(JSONText.quoted(manifest.path)),\n")
        out.write("  \"shard_count\": \(assignment.count),\n  \"shards\": [")
        for (index, total) in assignment.totals.enumerated() {
            out.write(index == 0 ? "\n    " : ",\n    ")
            out.write(JSONText.object([
                ("bytes", "\(total.bytes)"), ("components", "\(total.components)"), ("index", "\(index)"),
                ("jobs", "\(total.jobs)"), ("largest_component", "\(total.largestComponent)"),
                ("unsized_jobs", "\(total.unsizedJobs)"),
            ]))
        }
        out.write("\n  ]\n}\n")
    }

    /// One step as a JSON object, its keys written in sorted order as `JSONText.object` would
    /// sort them, instead of building and sorting a field list per step (bench/results/history.md).
    private static func stepJSON(_ plan: Plan, _ step: Plan.Step, cache: CacheLookup?) -> String {
        let job = plan.job(step)
        let local: String
        switch step.local {
        case .missing:
            local = "{\"state\": \"missing\"}"
        case .partial(let bytes):
            local = "{\"bytes\": \(bytes), \"state\": \"partial\"}"
        case .present(let bytes, let matches):
            local = "{\"bytes\": \(bytes), " + (matches.map { "\"size_matches\": \($0), " } ?? "") + "\"state\": \"exists\"}"
        }
        var text = "{\"checksums\": " + JSONText.object(job.checksums.map { ($0.algorithm.rawValue, JSONText.quoted($0.hex)) })
        if let from = job.checksumsFrom { text += ", \"checksums_from\": " + JSONText.quoted(from) }
        text += ", \"depends_on\": " + JSONText.array(job.dependencies)
        text += ", \"dest\": " + JSONText.quoted(job.dest.redacted)
        if let extract = job.extract {
            text += ", \"extract\": " + JSONText.object([
                ("format", JSONText.quoted(extract.format.rawValue)), ("into", JSONText.quoted(extract.into.redacted)),
                ("keep_archive", "\(extract.keepArchive)")])
        }
        text += ", \"id\": " + JSONText.quoted(job.id)
        if let cache, !job.isUpload { text += ", \"in_cache\": \(cache.serves(job))" }
        text += ", \"level\": \(step.level)"
        text += ", \"local\": " + local
        text += ", \"path\": " + JSONText.quoted(plan.displayPath(step))
        if let size = job.size { text += ", \"size\": \(size)" }
        if job.isUpload { text += ", \"upload\": {\"method\": \(JSONText.quoted(job.method.rawValue))}" }
        text += ", \"urls\": " + JSONText.array(job.urls.map(\.redacted))
        return text + "}"
    }
}
