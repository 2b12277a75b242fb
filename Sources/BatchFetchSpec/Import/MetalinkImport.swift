import Foundation

/// A Metalink 4 file (RFC 5854): each `<file name>` with its `<size>`, `<hash type>`s and
/// `<url priority>`s becomes a job whose mirrors are its URLs by priority (1 first; no
/// priority last) and whose checksums are every hash batchfetch knows (sha-256, sha-512, sha-1,
/// md5), and whose `pieces:` are its `<pieces type="sha-256">` (Docs/Mirrors.md). Read through
/// ``XMLTree``; problems carry the element's line.
package enum MetalinkImport {
    package static func read(_ data: Data, file: String) -> ImportResult {
        let root: XMLTree.Element
        switch XMLTree.parse(data, namespaces: true) {
        case .failure(let failure):
            // What was read of a broken document is not trusted: only the error is reported.
            let code = failure.code.map { " (XMLParser error \($0))" } ?? ""
            return ImportResult(problems: [ImportProblem(file: file, line: failure.line, "not well-formed XML\(code)")])
        case .success(let element):
            root = element
        }
        var result = ImportResult()
        guard root.name == "metalink", root.namespace == namespace else {
            let message = root.name == "metalink" && root.namespace == "http://www.metalinker.org/"
                ? "Metalink 3 is not supported; Metalink 4 (RFC 5854) is"
                : "not a Metalink 4 file (no <metalink> in urn:ietf:params:xml:ns:metalink)"
            result.problems.append(ImportProblem(file: file, line: root.line, message))
            return result
        }
        for element in root.children("file", in: namespace) {
            read(element, file: file, into: &result)
        }
        return result
    }

    static let namespace = "urn:ietf:params:xml:ns:metalink"
    static let hashTypes: [String: Checksum.Algorithm] = ["sha-256": .sha256, "sha-512": .sha512, "sha-1": .sha1, "md5": .md5]

    /// One `<file>`: its direct `<size>`, `<hash>`es, `<pieces type="sha-256">` and `<url>`s.
    private static func read(_ element: XMLTree.Element, file: String, into result: inout ImportResult) {
        func problem(_ line: Int, _ message: String) {
            result.problems.append(ImportProblem(file: file, line: line, message))
        }
        let name = element.attributes["name"] ?? ""
        if name.isEmpty { problem(element.line, "a <file> without a name") }
        var size: Int64?
        var checksums: [Checksum] = []
        var urls: [(priority: Int, url: String)] = []
        var pieces: (hashes: PieceHashes, line: Int)?
        for child in element.children where child.namespace == namespace {
            let value = child.text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch child.name {
            case "size":
                guard let parsed = Int64(value), parsed >= 0 else {
                    problem(child.line, "<size> '\(value)' is not a byte count")
                    continue
                }
                size = parsed
            case "hash":
                // Types batchfetch does not know are skipped.
                guard let type = child.attributes["type"]?.lowercased(), let algorithm = hashTypes[type] else { continue }
                switch Checksum.parse("\(algorithm.rawValue):\(value)") {
                case .success(let checksum): checksums.append(checksum)
                case .failure: problem(child.line, "<hash type=\"\(type)\"> '\(value)' is not a \(algorithm.rawValue) digest")
                }
            case "pieces":
                // Other piece types (sha-1 is common) are skipped, as unknown hashes are.
                guard child.attributes["type"]?.lowercased() == "sha-256" else { continue }
                guard let length = child.attributes["length"].flatMap(Int64.init), PieceHashes.allows(length) else {
                    problem(child.line, "<pieces length=\"\(child.attributes["length"] ?? "")\"> is not a power of two from 262144 to 67108864")
                    continue
                }
                let hashes = child.children("hash", in: namespace).map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }
                if let bad = hashes.first(where: { $0.count != 64 || !$0.allSatisfy(\.isHexDigit) }) {
                    problem(child.line, "<pieces> hash '\(bad)' is not a sha256 digest")
                    continue
                }
                pieces = (PieceHashes(length: length, sha256: hashes), child.line)
            case "url":
                if let issue = ImportLines.urlProblem(value) {
                    problem(child.line, issue)
                    continue
                }
                urls.append((child.attributes["priority"].flatMap(Int.init) ?? Int.max, value))
            default:
                break
            }
        }
        guard !name.isEmpty else { return }
        guard !urls.isEmpty else { return problem(element.line, "<file name=\"\(name)\"> has no http(s) <url>") }
        let ordered = urls.enumerated().sorted { ($0.element.priority, $0.offset) < ($1.element.priority, $1.offset) }.map(\.element.url)
        var job = ImportedJob(urls: ordered, dest: name, size: size, checksums: checksums, origin: "\(file):\(element.line)")
        if let (hashes, line) = pieces {
            if let size, !hashes.fits(size) {
                return problem(line, "<pieces> has \(hashes.sha256.count) hashes where \(size) bytes make \(hashes.count(for: size))")
            }
            job.pieces = hashes
        }
        result.jobs.append(job)
    }
}
