import Foundation

/// One job read from a file users already have (a URL list, an aria2 input file, a Metalink, a
/// SHA256SUMS, a CSV), before it becomes manifest text (``ManifestText``): where it came from,
/// its mirrors in order of preference, and what the file said about its content.
package struct ImportedJob: Sendable, Equatable {
    package var urls: [String]
    /// The destination the file named (aria2's `dir`/`out`, a Metalink file's name, a SUMS
    /// path, a CSV's dest); nil: derived from the URL.
    package var dest: String?
    package var size: Int64?
    package var checksums: [Checksum]
    /// Connections for the job (aria2's `split`).
    package var segments: Int?
    /// `file:line` of the entry, for the comment above the job.
    package var origin: String
    /// The job's id when the import names it (a signed SUMS file's own job); nil: from its dest.
    package var id: String?
    /// The job whose checksum file lists this one's digest (a signed SUMS file imported with its
    /// key): written as `checksums_from` instead of the digests.
    package var checksumsFrom: String?
    /// `signature:` as a YAML flow mapping (a signed SUMS file's own job).
    package var signature: String?
    /// A Metalink's `<pieces type="sha-256">`.
    package var pieces: PieceHashes?

    package init(urls: [String], dest: String? = nil, size: Int64? = nil, checksums: [Checksum] = [], segments: Int? = nil,
                origin: String) {
        (self.urls, self.dest, self.size, self.checksums, self.segments, self.origin) = (urls, dest, size, checksums, segments, origin)
    }
}

/// A line of an imported file that was not understood: `file:line: message`.
package struct ImportProblem: Sendable, Equatable, CustomStringConvertible, Error {
    package var file: String
    package var line: Int
    package var message: String

    package init(file: String, line: Int, _ message: String) {
        (self.file, self.line, self.message) = (file, line, message)
    }

    package var description: String { "\(file):\(line): \(message)" }
}

/// What an importer made of one file: its jobs and every line it did not understand.
package struct ImportResult: Sendable {
    package var jobs: [ImportedJob] = []
    package var problems: [ImportProblem] = []

    package init(jobs: [ImportedJob] = [], problems: [ImportProblem] = []) {
        (self.jobs, self.problems) = (jobs, problems)
    }
}

/// The formats `batchfetch import` reads (Docs/Import.md).
package enum ImportFormat: String, Sendable, CaseIterable {
    case urls, wget, aria2, metalink, sha256sums, csv

    /// The format of `path` from its name, else from its first bytes: a Metalink is XML, a sum
    /// file has digest lines, an aria2 input file indents its options under a URI, a CSV has a
    /// header with a `url` column; anything else is a list of URLs.
    package static func guess(path: String, text: String) -> ImportFormat {
        let name = ImportNames.lastComponent(path).lowercased()
        if name.hasSuffix(".meta4") || name.hasSuffix(".metalink") { return .metalink }
        if name.hasSuffix(".csv") || name.hasSuffix(".tsv") { return .csv }
        if name.hasSuffix("sums") || name.hasSuffix(".sha256") || name.hasSuffix(".sha512") { return .sha256sums }
        // The first lines only: splitting a million-line list whole to look at 50 would cost a pass.
        let lines = text.prefix(64 << 10).split(whereSeparator: \.isNewline).prefix(50).map(String.init)
        let content = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty && !$0.hasPrefix("#") }
        if content.first.map({ $0.hasPrefix("<?xml") || $0.hasPrefix("<metalink") }) == true { return .metalink }
        if !content.isEmpty, content.allSatisfy({ SumFile.entry($0[...]) != nil || $0.hasPrefix("-----") || $0.hasPrefix("Hash: ") }) {
            return .sha256sums
        }
        if content.contains(where: { $0.first == " " || $0.first == "\t" }) && content.contains(where: { $0.contains("=") }) {
            return .aria2
        }
        if let header = content.first?.lowercased(), header.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "url" }) {
            return .csv
        }
        return .urls
    }
}
