import Foundation

/// What `batchfetch plan` shows: the jobs in execution order with their levels, and what already
/// exists on disk for each. Computed without any network access.
package struct Plan: Sendable {
    /// What is on disk at a job's destination now.
    package enum LocalState: Sendable, Equatable {
        case missing
        /// A resumable `<dest>.part` with this many bytes.
        case partial(bytes: Int64)
        /// A file of this size is at `dest`; `sizeMatches` is nil when the manifest gives no size.
        case present(bytes: Int64, sizeMatches: Bool?)
    }

    /// One job in execution order. Holds the job's index rather than a copy of it, so planning a
    /// 100,000-job manifest does not duplicate the jobs.
    package struct Step: Sendable {
        package var jobIndex: Int
        package var level: Int
        package var local: LocalState
    }

    package let manifest: Manifest
    package let graph: JobGraph
    package let steps: [Step]

    package init(manifest: Manifest) {
        self.manifest = manifest
        let graph = JobGraph(manifest: manifest)
        self.graph = graph
        steps = graph.order.map { index in
            Step(jobIndex: index, level: graph.levels[index],
                 local: Self.localState(manifest.jobs[index].destination(in: manifest.outputDirectory),
                                        expectedSize: manifest.jobs[index].size))
        }
    }

    package func job(_ step: Step) -> Job {
        manifest.jobs[step.jobIndex]
    }

    /// The destination's absolute path, with environment-derived parts redacted.
    package func displayPath(_ step: Step) -> String {
        manifest.jobs[step.jobIndex].printedDestination(in: manifest.outputDirectory)
    }

    private static func localState(_ path: String, expectedSize: Int64?) -> LocalState {
        if let bytes = LocalFile.regularFileSize(atPath: path) {
            return .present(bytes: bytes, sizeMatches: expectedSize.map { $0 == bytes })
        }
        if let bytes = LocalFile.regularFileSize(atPath: DestPath.temporaryPaths(beside: path).part) {
            return .partial(bytes: bytes)
        }
        return .missing
    }
}
