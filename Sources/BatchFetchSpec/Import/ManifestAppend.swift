import Foundation

/// A manifest's bytes with jobs appended at the end of its `jobs:` sequence
/// (``JobsLayout``), written in the style of the jobs already there; every other byte is kept.
package enum ManifestAppend {
    /// The new text; `jobs` are named (ids and dests) by `names`, with `ids` where given.
    package static func appending(_ jobs: [(job: ImportedJob, id: String?)], to bytes: [UInt8], layout: JobsLayout,
                                 names: inout ImportNames) -> [UInt8] {
        let newline = bytes.firstIndex(of: UInt8(ascii: "\n")).map { $0 > 0 && bytes[$0 - 1] == UInt8(ascii: "\r") } ?? false ? "\r\n" : "\n"
        var insertion: String
        let offset: Int
        switch layout.shape {
        case .block(let at, let dashColumn, let flowItems):
            let indent = String(repeating: " ", count: dashColumn)
            insertion = jobs.map { job, id in
                flowItems
                    ? "\(indent)# \(job.origin)\n\(indent)- \(ManifestText.flowJob(job, named: &names, id: id))\n"
                    : ManifestText.job(job, named: &names, indent: indent, id: id)
            }.joined()
            offset = at
        case .flow(let at, let empty):
            var text = jobs.map { job, id in ManifestText.flowJob(job, named: &names, id: id) }.joined(separator: ", ")
            // Right after the last item (or the `[`), before any space; after a trailing comma
            // (`[a, b, ]`) or in `[]`, no comma of ours.
            let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t") }
            let last = bytes[..<at].lastIndex { !isSpace($0) } ?? at - 1
            if !empty && bytes[last] != UInt8(ascii: ",") { text = ", " + text }
            if bytes[last] == UInt8(ascii: ",") { text = " " + text }
            insertion = text
            offset = last + 1
        case .absent:
            insertion = "jobs:\n" + jobs.map { job, id in ManifestText.job(job, named: &names, indent: "  ", id: id) }.joined()
            offset = bytes.count
        }
        if offset == bytes.count, let last = bytes.last, last != UInt8(ascii: "\n") { insertion = "\n" + insertion }
        if newline == "\r\n" { insertion = insertion.replacingOccurrences(of: "\n", with: "\r\n") }
        return Array(bytes[..<offset]) + Array(insertion.utf8) + Array(bytes[offset...])
    }
}
