/// `--only`: a manifest narrowed to some jobs and everything they depend on.
extension Manifest {
    /// The jobs named in `ids` plus their dependencies (transitively), in manifest order; or the
    /// ids that name no job.
    package func selecting(_ ids: [String]) -> Result<Manifest, SelectionError> {
        let byID = Dictionary(jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let unknown = ids.filter { byID[$0] == nil }
        guard unknown.isEmpty else {
            return .failure(SelectionError(unknown: unknown.map { ($0, Suggestion.closest(to: $0, in: byID.keys)) }))
        }
        var wanted = Set<String>()
        var stack = ids
        while let id = stack.popLast() {
            guard wanted.insert(id).inserted, let job = byID[id] else { continue }
            stack.append(contentsOf: job.dependencies)
        }
        var selected = self
        selected.jobs = jobs.filter { wanted.contains($0.id) }
        return .success(selected)
    }
}

extension Manifest {
    /// The manifest without its upload jobs: what `check`, `verify` and `pin` are about (the
    /// content fetched; an upload's target is no mirror of anything).
    package var downloads: Manifest {
        var selected = self
        selected.jobs = jobs.filter { !$0.isUpload }
        return selected
    }
}

/// Ids given to `--only` that name no job, each with a likely intended id.
package struct SelectionError: Error, CustomStringConvertible {
    package var unknown: [(id: String, suggestion: String?)]

    package var description: String {
        unknown.map { item in
            "unknown job '\(item.id)'" + (item.suggestion.map { " (did you mean '\($0)'?)" } ?? "")
        }.joined(separator: "; ")
    }
}
