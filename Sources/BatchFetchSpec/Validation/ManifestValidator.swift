import Foundation

/// Cross-job rules of manifest v1: unique ids, known dependencies, no cycles, one writer per
/// destination, and destinations that stay inside `output_dir` on the real file system.
struct ManifestValidator {
    var problems = ProblemCollector()

    mutating func validate(_ manifest: Manifest) {
        let index = checkIDs(manifest.jobs)
        checkDependencies(manifest.jobs, index: index)
        checkDestinations(manifest.jobs)
        checkSymlinkedParents(manifest)
    }

    /// Reports repeated ids; returns the index of each id's first job.
    private mutating func checkIDs(_ jobs: [Job]) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(jobs.count)
        for (position, job) in jobs.enumerated() where !job.id.isEmpty {
            if let first = index[job.id] {
                let at = jobs[first].source.id
                problems.error("duplicate job id '\(job.id)' (first used at line \(at.line), column \(at.column))",
                               at: job.source.id)
            } else {
                index[job.id] = position
            }
        }
        return index
    }

    private mutating func checkDependencies(_ jobs: [Job], index: [String: Int]) {
        var edges = [[Int]](repeating: [], count: jobs.count)
        var edgeLocations: [Int: [Int: SourceLocation]] = [:]
        for (position, job) in jobs.enumerated() {
            let label = job.id.isEmpty ? "job #\(position + 1)" : "job '\(job.id)'"
            var named = zip(job.dependsOn, job.source.dependsOn).map { ($0, $1, "depends on") }
            if let from = job.checksumsFrom, let at = job.source.checksumsFrom {
                named.append((from, at, "'checksums_from' names"))
            }
            for (dependency, location, verb) in named {
                guard let target = index[dependency] else {
                    problems.error(
                        "\(label): \(verb) unknown job '\(dependency)'\(Suggestion.hint(for: dependency, in: index.keys))",
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

    /// One job per destination, and no destination inside another's path (`a` vs `a/b`).
    private mutating func checkDestinations(_ jobs: [Job]) {
        var owners: [String: Int] = [:]
        owners.reserveCapacity(jobs.count)
        for (position, job) in jobs.enumerated() where !job.dest.resolved.isEmpty {
            let dest = job.dest.resolved
            if let first = owners[dest] {
                let other = jobs[first]
                problems.error(
                    "job '\(job.id)': dest '\(job.dest.redacted)' is also written by job '\(other.id)' "
                        + "(line \(other.source.dest.line))",
                    at: job.source.dest)
            } else {
                owners[dest] = position
            }
        }
        // A dest that is a parent directory of another dest cannot be both a file and a folder.
        for (position, job) in jobs.enumerated() {
            var parent = Substring(job.dest.resolved)
            while let slash = parent.lastIndex(of: "/") {
                parent = parent[..<slash]
                if let owner = owners[String(parent)], owner != position {
                    problems.error(
                        "job '\(job.id)': dest '\(job.dest.redacted)' lies inside '\(jobs[owner].dest.redacted)', "
                            + "which job '\(jobs[owner].id)' writes as a file",
                        at: job.source.dest)
                    break
                }
            }
        }
    }

    /// Refuses destinations whose existing parent directories include a symbolic link: following
    /// it would write outside `output_dir`.
    private mutating func checkSymlinkedParents(_ manifest: Manifest) {
        var verdicts: [String: Bool] = [:]
        for job in manifest.jobs {
            let components = job.dest.resolved.split(separator: "/").dropLast()
            var relative = ""
            for component in components {
                relative += relative.isEmpty ? String(component) : "/\(component)"
                let isLink = verdicts[relative] ?? Self.isSymlink(manifest.outputDirectory + "/" + relative)
                verdicts[relative] = isLink
                if isLink {
                    problems.error(
                        "job '\(job.id)': dest '\(job.dest.redacted)' goes through symbolic link '\(relative)' "
                            + "in output_dir; refusing to write outside it",
                        at: job.source.dest)
                    break
                }
            }
        }
    }

    private static func isSymlink(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) == S_IFLNK
    }
}
