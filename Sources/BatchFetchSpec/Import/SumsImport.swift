import Foundation

/// A `SHA256SUMS`/`SHA512SUMS` (GNU `<hex>  name`, `<hex> *name`, or BSD `SHA256 (name) = <hex>`
/// lines) with the URL the files are under (`--base-url`): one job per listed file, its path
/// kept as the dest, its digest as the job's checksum. A clearsigned file's PGP armour is
/// skipped; any other line that is not an entry is a problem.
package enum SumsImport {
    package static func read(_ text: String, file: String, baseURL: String?) -> ImportResult {
        var result = ImportResult()
        guard let baseURL else {
            result.problems.append(ImportProblem(file: file, line: 1, "a checksum list needs --base-url (where its files are)"))
            return result
        }
        let base = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        var inSignature = false
        var byName: [String: Int] = [:]
        for (number, line) in ImportLines.numbered(text) {
            if line.hasPrefix("-----BEGIN PGP SIGNATURE") { inSignature = true }
            if inSignature {
                if line.hasPrefix("-----END PGP SIGNATURE") { inSignature = false }
                continue
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || line.hasPrefix("-----BEGIN PGP SIGNED MESSAGE") || line.hasPrefix("Hash: ") {
                continue
            }
            guard let entry = SumFile.entry(line[...]) else {
                result.problems.append(ImportProblem(file: file, line: number, "not a checksum line (GNU '<hex>  name' or BSD 'SHA256 (name) = <hex>')"))
                continue
            }
            let path = entry.name.hasPrefix("./") ? String(entry.name.dropFirst(2)) : entry.name
            if let earlier = byName[path] {
                // SHA256SUMS and SHA512SUMS of one release, or both lines of one file: one job, both digests.
                if result.jobs[earlier].checksums.contains(where: { $0.algorithm == entry.checksum.algorithm }) {
                    result.problems.append(ImportProblem(file: file, line: number, "'\(path)' is listed twice"))
                } else {
                    result.jobs[earlier].checksums.append(entry.checksum)
                }
                continue
            }
            byName[path] = result.jobs.count
            result.jobs.append(ImportedJob(urls: [base + ImportNames.percentEncodedPath(path)], dest: path,
                                           checksums: [entry.checksum], origin: "\(file):\(number)"))
        }
        return result
    }
}
