import Foundation

/// A plain list of URLs, or a `wget -i` file: one URL per line (wget also takes several on a
/// line, separated by spaces), `#` comments and blank lines skipped.
package enum URLListImport {
    package static func read(_ text: String, file: String) -> ImportResult {
        var result = ImportResult()
        for (number, line) in ImportLines.numbered(text) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            for token in trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                let url = String(token)
                if let problem = ImportLines.urlProblem(url) {
                    result.problems.append(ImportProblem(file: file, line: number, problem))
                } else {
                    result.jobs.append(ImportedJob(urls: [url], origin: "\(file):\(number)"))
                }
            }
        }
        return result
    }
}

/// Lines with their numbers, and the checks every importer makes of a URL.
package enum ImportLines {
    /// Lines numbered from 1; a CRLF file's lines without their CR, a BOM dropped.
    package static func numbered(_ text: String) -> [(Int, String)] {
        // By bytes: to a Swift string "\r\n" is one character, not a line break after a CR.
        var bytes = Substring(text).utf8[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        return bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated().map { index, line in
            (index + 1, String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self))
        }
    }

    /// Why `url` cannot be a job's URL, or nil.
    package static func urlProblem(_ url: String) -> String? {
        let lower = url.lowercased()
        guard ["http://", "https://", "s3://", "gs://"].contains(where: { lower.hasPrefix($0) }) else {
            return "'\(url)' is not an http, https, s3 or gs URL"
        }
        // Syntax only, and cheap (a million-line list): the manifest's validation judges the rest.
        let afterScheme = url[url.range(of: "://")!.upperBound...]
        guard let first = afterScheme.first, !"/?#".contains(first) else { return "'\(url)' has no host" }
        return nil
    }
}
