import Foundation

/// An aria2 input file (`aria2c -i`): a line of URIs (tab-separated mirrors of one file), then
/// its options on indented lines (` out=NAME`, ` dir=DIR`, ` checksum=sha-256=HEX`, ` split=N`).
/// Options that change nothing batchfetch does (how aria2 itself allocates or names files) are
/// accepted and ignored; any other option is a problem, since dropping it (a header, a
/// referer, a user) could fetch something else.
package enum Aria2InputImport {
    /// Options of aria2 that have no bearing on what is fetched or where it lands.
    static let ignored: Set<String> = [
        "continue", "allow-overwrite", "auto-file-renaming", "file-allocation", "max-connection-per-server",
        "min-split-size", "remote-time", "conditional-get", "always-resume", "max-tries", "retry-wait",
        "connect-timeout", "timeout", "lowest-speed-limit", "max-download-limit", "piece-length",
    ]

    package static func read(_ text: String, file: String) -> ImportResult {
        var result = ImportResult()
        var current: (job: ImportedJob, directory: String?, name: String?)?
        /// An entry with an option not understood is left out whole (with --skip-invalid): a job
        /// without its header or checksum would be another job.
        var problemsBefore = 0
        func finish() {
            defer { current = nil }
            guard let (imported, directory, name) = current, result.problems.count == problemsBefore else { return }
            var job = imported
            if name != nil || directory != nil {
                let base = name ?? ImportNames.fileName(ofURL: job.urls[0])
                job.dest = directory.map { ($0 as NSString).appendingPathComponent(base) } ?? base
            }
            result.jobs.append(job)
        }
        for (number, line) in ImportLines.numbered(text) {
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.hasPrefix("#") { continue }
            guard line.first == " " || line.first == "\t" else {
                finish()
                let uris = line.split(separator: "\t").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                if let problem = uris.lazy.compactMap(ImportLines.urlProblem).first {
                    result.problems.append(ImportProblem(file: file, line: number, problem))
                    continue
                }
                current = (ImportedJob(urls: uris, origin: "\(file):\(number)"), nil, nil)
                problemsBefore = result.problems.count
                continue
            }
            let option = line.drop { $0 == " " || $0 == "\t" }
            guard current != nil else {
                result.problems.append(ImportProblem(file: file, line: number, "an option before any URI: '\(option)'"))
                continue
            }
            guard let equals = option.firstIndex(of: "=") else {
                result.problems.append(ImportProblem(file: file, line: number, "'\(option)' is not an option (name=value)"))
                continue
            }
            let name = String(option[..<equals]), value = String(option[option.index(after: equals)...])
            switch name {
            case "out":
                current!.name = value
            case "dir":
                current!.directory = value
            case "split":
                guard let count = Int(value), (1...16).contains(count) else {
                    result.problems.append(ImportProblem(file: file, line: number, "split=\(value): a count from 1 to 16 is expected"))
                    continue
                }
                current!.job.segments = count
            case "checksum":
                switch checksum(value) {
                case .success(let parsed): current!.job.checksums.append(parsed)
                case .failure(let problem): result.problems.append(ImportProblem(file: file, line: number, problem.message))
                }
            case _ where ignored.contains(name):
                continue
            default:
                result.problems.append(ImportProblem(file: file, line: number, "the aria2 option '\(name)' is not supported"))
            }
        }
        finish()
        return result
    }

    /// `sha-256=HEX` (aria2's TYPE=DIGEST) as a checksum.
    static func checksum(_ value: String) -> Result<Checksum, ImportProblem> {
        guard let equals = value.firstIndex(of: "=") else {
            return .failure(ImportProblem(file: "", line: 0, "checksum=\(value): TYPE=DIGEST is expected"))
        }
        let type = value[..<equals].lowercased().replacingOccurrences(of: "-", with: "")
        guard let algorithm = Checksum.Algorithm(rawValue: type) else {
            return .failure(ImportProblem(file: "", line: 0, "checksum type '\(value[..<equals])' is not supported (sha-256, sha-512, sha-1, md5)"))
        }
        switch Checksum.parse("\(algorithm.rawValue):\(value[value.index(after: equals)...])") {
        case .success(let checksum): return .success(checksum)
        case .failure(let error): return .failure(ImportProblem(file: "", line: 0, "checksum=\(value): \(error)"))
        }
    }
}
