import Foundation

/// Manifest YAML for imported jobs, as a person would write it: one block mapping per job with
/// a comment saying where it came from, every string double-quoted (so no URL or name can turn
/// into YAML syntax), keys in the order people read them.
package enum ManifestText {
    /// A whole manifest: a header comment, `version`, `output_dir` when given, and the jobs.
    package static func manifest(jobs: [ImportedJob], named names: inout ImportNames, outputDirectory: String?,
                                sources: [String]) -> String {
        var text = "# Made by `batchfetch import` from \(sources.joined(separator: ", ")).\n"
        text += "# Check with `batchfetch validate`; `batchfetch pin` writes the lockfile.\nversion: 1\n"
        if let outputDirectory { text += "output_dir: \(quoted(outputDirectory))\n" }
        text += "jobs:\n"
        for job in jobs { text += self.job(job, named: &names, indent: "  ") }
        return text
    }

    /// One job as a block sequence entry at `indent`, with its `# file:line` comment above.
    package static func job(_ job: ImportedJob, named names: inout ImportNames, indent: String, id: String? = nil) -> String {
        var lines = ["# \(job.origin.replacingOccurrences(of: "\n", with: " "))"]
        for (index, (key, value)) in fields(job, named: &names, id: id).enumerated() {
            let lead = index == 0 ? "- " : "  "
            switch value {
            case .scalar(let text): lines.append("\(lead)\(key): \(text)")
            case .list(let items): lines += ["\(lead)\(key):"] + items.map { "    - \($0)" }
            }
        }
        return lines.map { indent + $0 + "\n" }.joined()
    }

    /// One job as a flow mapping on one line (`{id: "a", url: "…", dest: "…"}`), for manifests
    /// whose jobs are written that way.
    package static func flowJob(_ job: ImportedJob, named names: inout ImportNames, id: String? = nil) -> String {
        let pairs = fields(job, named: &names, id: id).map { key, value in
            switch value {
            case .scalar(let text): "\(key): \(text)"
            case .list(let items): "\(key): [\(items.joined(separator: ", "))]"
            }
        }
        return "{" + pairs.joined(separator: ", ") + "}"
    }

    /// A field's value, already YAML: one scalar, or the items of a list.
    private enum Value {
        case scalar(String)
        case list([String])
    }

    /// A job's fields in the order people read them, whichever style writes them.
    private static func fields(_ job: ImportedJob, named names: inout ImportNames, id: String?) -> [(String, Value)] {
        let (id, dest) = names.named(job, id: job.id ?? id)
        let urls = job.urls.map { quoted(url($0)) }
        var fields: [(String, Value)] = [("id", .scalar(quoted(id))), urls.count == 1 ? ("url", .scalar(urls[0])) : ("urls", .list(urls)),
                                         ("dest", .scalar(quoted(dest)))]
        if let size = job.size { fields.append(("size", .scalar("\(size)"))) }
        let checksums = job.checksums.map { quoted($0.description) }
        if let checksumsFrom = job.checksumsFrom {
            fields.append(("checksums_from", .scalar(quoted(checksumsFrom))))
        } else if !checksums.isEmpty {
            fields.append(("checksum", checksums.count == 1 ? .scalar(checksums[0]) : .list(checksums)))
        }
        if let signature = job.signature { fields.append(("signature", .scalar(signature))) }
        if let segments = job.segments { fields.append(("segments", .scalar("\(segments)"))) }
        if let pieces = job.pieces {
            fields.append(("pieces", .scalar("{length: \(pieces.length), sha256: [\(pieces.sha256.joined(separator: ", "))]}")))
        }
        return fields
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
