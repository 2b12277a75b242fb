import Foundation

/// Cross-job rules of manifest v1: unique ids, known dependencies, no cycles, one writer per
/// destination, and destinations that stay inside `output_dir` on the real file system.
///
/// Loops read jobs by index rather than binding whole `Job` values: a 100,000-job manifest is
/// checked in a few tens of milliseconds that way, instead of copying every job several times.
struct ManifestValidator {
    var problems = ProblemCollector()
    /// The manifest and its job lists (``Manifest/sourceFiles``), for messages that point at a
    /// second place.
    var files: [String] = []

    /// Runs every rule. The rules share nothing, so they run in two groups side by side (on a
    /// million jobs they take about a second each); each group returns its rules' problems in
    /// two parts, put back together in the order of running them one after another.
    mutating func validate(_ manifest: Manifest) {
        let budget = suggestionBudget
        let files = manifest.sourceFiles
        let groups = concurrentMap(2) { group in
            var first = ManifestValidator(files: files, suggestionBudget: budget)
            var second = ManifestValidator(files: files)
            if group == 0 {
                let index = first.checkIDs(manifest.jobs)
                first.checkDependencies(manifest.jobs, index: index)
                second.checkToolFiles(manifest)
            } else {
                first.checkDestinations(manifest.jobs)
                second.checkSymlinkedParents(manifest)
            }
            return [first.problems, second.problems]
        }
        // ids and dependencies, destinations, tool files, symbolic links
        for part in [groups[0][0], groups[1][0], groups[0][1], groups[1][1]] {
            for problem in part.problems { problems.error(problem.message, at: problem.location) }
        }
    }

    /// No dest may be another dest's partial or sidecar (`h.bin` and `h.bin.part` would write
    /// into each other), or one of the tool's own files (a shard's too), or the lockfile when it
    /// lies in `output_dir`.
    ///
    /// Partial names always end in `.part` and sidecars in `.part.json`, so only dests with those
    /// endings are looked up among the others' temporary paths; a million-job manifest without
    /// any such dest computes none.
    private mutating func checkToolFiles(_ manifest: Manifest) {
        let jobs = manifest.jobs
        var reserved: [String: String] = [:]
        for name in ToolFiles.all { reserved[name] = "batchfetch's own file" }
        let manifestURL = URL(fileURLWithPath: manifest.path)
        let lockURL = manifestURL.deletingPathExtension().appendingPathExtension("lock.json").standardizedFileURL
        let outputPrefix = URL(fileURLWithPath: manifest.outputDirectory).standardizedFileURL.path + "/"
        if lockURL.path.hasPrefix(outputPrefix) { reserved[String(lockURL.path.dropFirst(outputPrefix.count))] = "the lockfile" }
        let sidecarSuffix = DestPath.partSuffix + ".json"
        var suspects: Set<String> = []
        for position in jobs.indices {
            let dest = jobs[position].dest.resolved
            if dest.hasSuffix(DestPath.partSuffix) || dest.hasSuffix(sidecarSuffix) { suspects.insert(dest) }
        }
        if !suspects.isEmpty {
            for position in jobs.indices where !jobs[position].dest.resolved.isEmpty {
                let temporary = DestPath.temporaryPaths(beside: jobs[position].dest.resolved)
                for path in [temporary.part, temporary.sidecar] where suspects.contains(path) {
                    reserved[path] = "the partial download of job '\(jobs[position].id)'"
                }
            }
        }
        for position in jobs.indices {
            let dest = jobs[position].dest.resolved
            guard let what = reserved[dest] ?? (ToolFiles.isShardFile(dest) ? "a shard's own file of batchfetch" : nil) else {
                continue
            }
            problems.error(
                "job '\(jobs[position].id)': dest '\(jobs[position].dest.redacted)' is \(what); choose another dest",
                at: jobs[position].source.dest)
        }
    }

    /// A second place named in a message: `line 12` in the manifest, `urls.csv line 12` in a list.
    private func place(_ location: SourceLocation, column: Bool = false) -> String {
        let position = "line \(location.line)" + (column ? ", column \(location.column)" : "")
        guard location.file > 0, location.file < files.count else { return position }
        return "\(files[location.file]) \(position)"
    }

    private static func label(_ jobs: [Job], _ position: Int) -> String {
        jobs[position].id.isEmpty ? "job #\(position + 1)" : "job '\(jobs[position].id)'"
    }

    /// Reports repeated ids; returns the index of each id's first job.
    private mutating func checkIDs(_ jobs: [Job]) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(jobs.count)
        for position in jobs.indices where !jobs[position].id.isEmpty {
            let id = jobs[position].id
            // One lookup per id (a million of them): insert, and put the first back on a repeat.
            if let first = index.updateValue(position, forKey: id) {
                index[id] = first
                let at = jobs[first].source.id
                problems.error("duplicate job id '\(id)' (first used at \(place(at, column: true)))",
                               at: jobs[position].source.id)
            }
        }
        return index
    }

    /// How many job ids, over all unknown dependencies, are compared for a "did you mean": each
    /// comparison is an edit distance, and a manifest of 300,000 jobs with a few hundred unknown
    /// dependencies took three minutes to validate before this bound.
    var suggestionBudget = 2_000_000

    private mutating func checkDependencies(_ jobs: [Job], index: [String: Int]) {
        var edges = [[Int]](repeating: [], count: jobs.count)
        var edgeLocations: [Int: [Int: SourceLocation]] = [:]
        for position in jobs.indices {
            let dependsOn = jobs[position].dependsOn
            let locations = jobs[position].source.dependsOn
            let count = dependsOn.count + (jobs[position].checksumsFrom == nil ? 0 : 1)
            for item in 0..<count {
                let isChecksumSource = item == dependsOn.count
                let dependency = isChecksumSource ? jobs[position].checksumsFrom! : dependsOn[item]
                let location = isChecksumSource ? jobs[position].source.checksumsFrom ?? jobs[position].source.job : locations[item]
                guard let target = index[dependency] else {
                    let verb = isChecksumSource ? "'checksums_from' names" : "depends on"
                    suggestionBudget -= index.count
                    problems.error(
                        "\(Self.label(jobs, position)): \(verb) unknown job '\(dependency)'"
                            + (suggestionBudget >= 0 ? Suggestion.hint(for: dependency, in: index.keys) : ""),
                        at: location)
                    continue
                }
                if !edges[position].contains(target) {
                    edges[position].append(target)
                    edgeLocations[position, default: [:]][target] = location
                }
            }
        }
        for cycle in JobGraph.cycles(edges: edges) {
            let names = cycle.map { jobs[$0].id }.joined(separator: " -> ")
            let location = edgeLocations[cycle[0]]?[cycle[1]] ?? jobs[cycle[0]].source.job
            problems.error("dependency cycle: \(names)", at: location)
        }
    }

    /// One job per destination, and no destination inside another's path (`a` vs `a/b`); then
    /// the rules of uploads, which read a dest instead of writing one.
    private mutating func checkDestinations(_ jobs: [Job]) {
        var owners: [String: Int] = [:]
        owners.reserveCapacity(jobs.count)
        // Every directory some dest lies in, with one job that needs it.
        var directories: [Substring: Int] = [:]
        var uploads: [Int] = []
        for position in jobs.indices where !jobs[position].dest.resolved.isEmpty {
            if jobs[position].upload != nil {
                uploads.append(position)
                continue
            }
            let dest = jobs[position].dest.resolved
            if let first = owners.updateValue(position, forKey: dest) {
                owners[dest] = first
                problems.error(
                    "job '\(jobs[position].id)': dest '\(jobs[position].dest.redacted)' is also written by job "
                        + "'\(jobs[first].id)' (\(place(jobs[first].source.dest)))",
                    at: jobs[position].source.dest)
                continue
            }
            var parent = Substring(dest)
            while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
                parent = parent[..<slash]
                if directories.updateValue(position, forKey: parent) != nil { break }
            }
        }
        let conflicts = directories.compactMap { directory, user in
            owners[String(directory)].map { (user: user, owner: $0) }
        }
        for (user, owner) in conflicts.sorted(by: { ($0.user, $0.owner) < ($1.user, $1.owner) }) {
            problems.error(
                "job '\(jobs[user].id)': dest '\(jobs[user].dest.redacted)' lies inside '\(jobs[owner].dest.redacted)', "
                    + (jobs[owner].listing == nil ? "which job '\(jobs[owner].id)' writes as a file"
                        : "where job '\(jobs[owner].id)' puts the files it lists"),
                at: jobs[user].source.dest)
        }
        if !uploads.isEmpty { checkUploads(jobs, uploads: uploads, owners: owners) }
        checkTrees(jobs, owners: owners, directories: directories)
    }

    /// An `extract` tree replaces its whole directory (`into`), so it may not be another job's
    /// dest or lie inside one, hold another job's dest, or overlap another tree.
    private mutating func checkTrees(_ jobs: [Job], owners: [String: Int], directories: [Substring: Int]) {
        var trees: [String: Int] = [:]
        var treeDirectories: [Substring: Int] = [:]
        for position in jobs.indices {
            guard let extract = jobs[position].extract else { continue }
            let into = extract.into.resolved
            let shown = "job '\(jobs[position].id)': extract into '\(extract.into.redacted)'"
            if let owner = owners[into] {
                problems.error("\(shown) is the dest of job '\(jobs[owner].id)' (\(place(jobs[owner].source.dest)))",
                               at: extract.intoLocation)
                continue
            }
            if let user = directories[Substring(into)] {
                problems.error("\(shown) would replace the dest of job '\(jobs[user].id)' ('\(jobs[user].dest.redacted)', "
                    + "\(place(jobs[user].source.dest))): a tree owns its whole directory", at: extract.intoLocation)
                continue
            }
            if let other = trees.updateValue(position, forKey: into) {
                trees[into] = other
                problems.error("\(shown) is also the tree of job '\(jobs[other].id)' (\(place(jobs[other].extract!.intoLocation)))",
                               at: extract.intoLocation)
                continue
            }
            var parent = Substring(into)
            while let slash = parent.utf8.lastIndex(of: UInt8(ascii: "/")) {
                parent = parent[..<slash]
                if let owner = owners[String(parent)] {
                    problems.error("\(shown) lies inside '\(jobs[owner].dest.redacted)', which job '\(jobs[owner].id)' writes as a file",
                                   at: extract.intoLocation)
                }
                treeDirectories[parent] = treeDirectories[parent] ?? position
            }
        }
        for (into, position) in trees.sorted(by: { $0.value < $1.value }) {
            let extract = jobs[position].extract!
            if let inner = treeDirectories[Substring(into)] {
                problems.error("job '\(jobs[inner].id)': extract into '\(jobs[inner].extract!.into.redacted)' lies inside the tree of job "
                    + "'\(jobs[position].id)' ('\(extract.into.redacted)', \(place(extract.intoLocation)))",
                    at: jobs[inner].extract!.intoLocation)
            }
        }
    }

    /// An upload of a file that a download job of the manifest writes must wait for that job
    /// (`depends_on`, directly or through other jobs), or it would send yesterday's file or none;
    /// and two `PUT`s to one URL would overwrite each other (several `POST`s to one endpoint are
    /// normal).
    private mutating func checkUploads(_ jobs: [Job], uploads: [Int], owners: [String: Int]) {
        var targets: [String: Int] = [:]
        let index = Dictionary(jobs.indices.map { (jobs[$0].id, $0) }, uniquingKeysWith: { first, _ in first })
        /// Whether `job` waits for `writer`, following dependencies (unknown ids and cycles are
        /// reported by their own rules).
        func waits(_ job: Int, for writer: Int) -> Bool {
            var seen: Set<Int> = [job]
            var stack = [job]
            while let next = stack.popLast() {
                for dependency in jobs[next].dependencies {
                    guard let target = index[dependency], seen.insert(target).inserted else { continue }
                    if target == writer { return true }
                    stack.append(target)
                }
            }
            return false
        }
        for position in uploads {
            let job = jobs[position]
            if let writer = owners[job.dest.resolved], !waits(position, for: writer) {
                problems.error(
                    "job '\(job.id)': uploads '\(job.dest.redacted)', which job '\(jobs[writer].id)' downloads; "
                        + "add depends_on: [\(jobs[writer].id)] so that it sends the verified file",
                    at: job.source.dest)
            }
            guard job.method == .put, let target = job.url else { continue }
            if let first = targets.updateValue(position, forKey: target.resolved) {
                targets[target.resolved] = first
                problems.error(
                    "job '\(job.id)': PUT to '\(target.redacted)', which job '\(jobs[first].id)' also uploads to "
                        + "(\(place(jobs[first].source.job))); one would overwrite the other",
                    at: job.source.job)
            }
        }
    }

    /// Refuses destinations whose existing parent directories include a symbolic link: following
    /// it would write outside `output_dir`.
    private mutating func checkSymlinkedParents(_ manifest: Manifest) {
        let jobs = manifest.jobs
        /// For each parent directory seen: the symlink on its path, or "" when there is none.
        var verdicts: [Substring: String] = [:]
        for position in jobs.indices {
            let dest = jobs[position].dest.resolved
            guard let slash = dest.utf8.lastIndex(of: UInt8(ascii: "/")) else { continue }
            let parent = dest[..<slash]
            let link: String
            if let known = verdicts[parent] {
                link = known
            } else {
                link = Self.firstSymlink(in: parent, under: manifest.outputDirectory, verdicts: &verdicts)
            }
            if !link.isEmpty {
                problems.error(
                    "job '\(jobs[position].id)': dest '\(jobs[position].dest.redacted)' goes through symbolic link "
                        + "'\(link)' in output_dir; refusing to write outside it",
                    at: jobs[position].source.dest)
            }
        }
    }

    /// The first prefix of `directory` that is a symbolic link, or "", caching every prefix.
    private static func firstSymlink(in directory: Substring, under root: String, verdicts: inout [Substring: String]) -> String {
        var end = directory.startIndex
        var found = ""
        while end < directory.endIndex {
            end = directory[directory.index(after: end)...].firstIndex(of: "/") ?? directory.endIndex
            let prefix = directory[..<end]
            if let known = verdicts[prefix] {
                found = known
            } else {
                if found.isEmpty && isSymlink(root + "/" + prefix) { found = String(prefix) }
                verdicts[prefix] = found
            }
        }
        return found
    }

    private static func isSymlink(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) == S_IFLNK
    }
}
