import Foundation

/// Turns the rows of one job list into download jobs, reporting every bad value at its
/// `file:line:col`.
///
/// A row's values are taken as written: `${VAR}` is not expanded in lists (a secret belongs in
/// the manifest's `defaults.headers`, not in a million rows). Ids and dests must be unique across
/// the manifest, which ``ManifestValidator`` checks with the YAML jobs.
struct ListJobDecoder {
    let list: JobList
    /// The `id_prefix` with its slash (`img/`), or "".
    private let prefix: String
    /// Every row's job starts as a copy of this one (``ManifestDecoder/JobDefaults/prototype()``).
    private let prototype: Job

    init(list: JobList, defaults: ManifestDecoder.JobDefaults) {
        self.list = list
        prefix = list.idPrefix.map { $0 + "/" } ?? ""
        prototype = defaults.prototype()
    }

    /// The row's job, or nil when a value it needs is wrong (each problem reported).
    func job(_ row: ListRow, problems: inout ProblemCollector) -> Job? {
        var usable = true
        func fail(_ message: String, at location: SourceLocation) {
            problems.error(message, at: location)
            usable = false
        }
        guard let urlField = row.url else {
            fail("this row has no 'url'", at: row.location)
            return nil
        }
        var urls: [TemplatedString] = []
        urls.reserveCapacity(1 + (row.mirrorText == nil && row.mirrorList == nil ? 0 : 2))
        for field in [urlField] + row.mirrors {
            let url = TemplatedString(literal: field.text)
            if let problem = ManifestDecoder.urlProblem(url, objectStores: true) {
                fail(problem, at: field.location)
            } else {
                urls.append(url)
            }
        }

        let dest: String?
        let destLocation: SourceLocation
        if let field = row.dest {
            destLocation = field.location
            dest = normalized(field.text, at: field.location, problems: &problems)
        } else {
            destLocation = urlField.location
            dest = usable ? derivedDest(urlField.text, at: urlField.location, problems: &problems) : nil
        }
        if dest == nil { usable = false }

        var id = ""
        if let field = row.id {
            if DestPath.hasControlCharacter(field.text) {
                fail("id '\(field.text.debugDescription.dropFirst().dropLast())' contains a control character", at: field.location)
            } else {
                id = prefix + field.text
            }
        } else if let dest {
            id = prefix.isEmpty ? dest : prefix + dest  // one string shared by id and dest
        }

        var size: Int64?
        if let field = row.size {
            switch ManifestDecoder.size(field.text) {
            case .success(let value): size = value
            case .failure(let problem): fail(problem.message, at: field.location)
            }
        }

        var checksums: [Checksum] = []
        if let field = row.checksum {
            switch Checksum.parse(field.text) {
            case .success(let checksum): checksums.append(checksum)
            case .failure(let error): fail(ManifestDecoder.describe(error, text: field.text), at: field.location)
            }
        }
        for column in [ListColumn.sha256, .sha512, .sha1, .md5] {
            guard let field = row[column], let algorithm = column.algorithm else { continue }
            switch Checksum.parse(algorithm.rawValue + ":" + field.text) {
            case .success(let checksum): checksums.append(checksum)
            case .failure(let error): fail("'\(column.rawValue)': \(ManifestDecoder.describe(error, text: field.text))", at: field.location)
            }
        }

        guard usable, let dest else { return nil }
        var job = prototype
        job.id = id
        job.urls = urls
        job.dest = TemplatedString(literal: dest)
        job.size = size
        job.checksums = checksums
        job.source = JobSource(job: row.location, id: row.id?.location ?? row.location, dest: destLocation, dependsOn: [], checksumsFrom: nil)
        return job
    }

    /// The dest a row without one gets: the list's template with `{path}` and `{name}` filled
    /// from the URL.
    private func derivedDest(_ url: String, at location: SourceLocation, problems: inout ProblemCollector) -> String? {
        guard let path = DestPath.decodedPath(ofURL: url), !path.isEmpty else {
            problems.error("cannot name the file after '\(url)': it has no path; give the row a 'dest'", at: location)
            return nil
        }
        let text: String
        if list.destTemplate == JobList.defaultDestTemplate {
            text = path
        } else {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            text = list.destTemplate.replacingOccurrences(of: "{path}", with: path).replacingOccurrences(of: "{name}", with: name)
        }
        return normalized(text, at: location, problems: &problems)
    }

    /// A dest made normal, or nil with the problem reported.
    private func normalized(_ text: String, at location: SourceLocation, problems: inout ProblemCollector) -> String? {
        switch DestPath.normalize(text) {
        case .success(let path):
            return path
        case .failure(let problem):
            let message = problem.message(key: "dest", shown: text)
            problems.error(message, at: location)
            return nil
        }
    }
}
