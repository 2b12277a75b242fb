import Foundation

/// Manifest YAML for imported jobs, as a person would write it: one block mapping per job with
/// a comment saying where it came from, every string double-quoted (so no URL or name can turn
/// into YAML syntax), keys in the order people read them.
public enum ManifestText {
    /// A whole manifest: a header comment, `version`, `output_dir` when given, and the jobs.
    public static func manifest(jobs: [ImportedJob], named names: inout ImportNames, outputDirectory: String?,
                                sources: [String]) -> String {
        var text = "# Made by `batchfetch import` from \(sources.joined(separator: ", ")).\n"
        text += "# Check with `batchfetch validate`; `batchfetch pin` writes the lockfile.\nversion: 1\n"
        if let outputDirectory { text += "output_dir: \(quoted(outputDirectory))\n" }
        text += "jobs:\n"
        for job in jobs { text += self.job(job, named: &names, indent: "  ") }
        return text
    }

    /// One job as a block sequence entry at `indent`, with its `# file:line` comment above.
    public static func job(_ job: ImportedJob, named names: inout ImportNames, indent: String, id: String? = nil) -> String {
        let (id, dest) = names.named(job, id: id)
        var lines = ["# \(job.origin.replacingOccurrences(of: "\n", with: " "))", "- id: \(quoted(id))"]
        if job.urls.count == 1 {
            lines.append("  url: \(quoted(url(job.urls[0])))")
        } else {
            lines.append("  urls:")
            lines += job.urls.map { "    - \(quoted(url($0)))" }
        }
        lines.append("  dest: \(quoted(dest))")
        if let size = job.size { lines.append("  size: \(size)") }
        if job.checksums.count == 1 {
            lines.append("  checksum: \(quoted(job.checksums[0].description))")
        } else if !job.checksums.isEmpty {
            lines.append("  checksum:")
            lines += job.checksums.map { "    - \(quoted($0.description))" }
        }
        if let segments = job.segments { lines.append("  segments: \(segments)") }
        return lines.map { indent + $0 + "\n" }.joined()
    }

    /// One job as a flow mapping on one line (`{id: "a", url: "…", dest: "…"}`), for manifests
    /// whose jobs are written that way.
    public static func flowJob(_ job: ImportedJob, named names: inout ImportNames, id: String? = nil) -> String {
        let (id, dest) = names.named(job, id: id)
        var pairs = ["id: \(quoted(id))"]
        pairs.append(job.urls.count == 1 ? "url: \(quoted(url(job.urls[0])))"
            : "urls: [\(job.urls.map { quoted(url($0)) }.joined(separator: ", "))]")
        pairs.append("dest: \(quoted(dest))")
        if let size = job.size { pairs.append("size: \(size)") }
        if !job.checksums.isEmpty {
            pairs.append(job.checksums.count == 1 ? "checksum: \(quoted(job.checksums[0].description))"
                : "checksum: [\(job.checksums.map { quoted($0.description) }.joined(separator: ", "))]")
        }
        if let segments = job.segments { pairs.append("segments: \(segments)") }
        return "{" + pairs.joined(separator: ", ") + "}"
    }

    /// A URL as a manifest takes it: spaces and other characters a URL may not hold percent-encoded.
    private static func url(_ text: String) -> String {
        URLSyntax.encodingInvalidCharacters(text)
    }

    /// A YAML double-quoted scalar (``QuotedText``).
    private static func quoted(_ text: String) -> String {
        QuotedText.quoted(text)
    }
}
