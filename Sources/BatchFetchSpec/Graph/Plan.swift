import Foundation

/// What `batchfetch plan` shows: the jobs in execution order with their levels, and what already
/// exists on disk for each. Computed without any network access.
public struct Plan: Sendable {
    /// What is on disk at a job's destination now.
    public enum LocalState: Sendable, Equatable {
        case missing
        /// A resumable `<dest>.part` with this many bytes.
        case partial(bytes: Int64)
        /// A file of this size is at `dest`; `sizeMatches` is nil when the manifest gives no size.
        case present(bytes: Int64, sizeMatches: Bool?)
    }

    /// One job in execution order. Holds the job's index rather than a copy of it, so planning a
    /// 100,000-job manifest does not duplicate the jobs.
    public struct Step: Sendable {
        public var jobIndex: Int
        public var level: Int
        public var local: LocalState
    }

    public let manifest: Manifest
    public let graph: JobGraph
    public let steps: [Step]

    public init(manifest: Manifest) {
        self.manifest = manifest
        let graph = JobGraph(manifest: manifest)
        self.graph = graph
        steps = graph.order.map { index in
            Step(jobIndex: index, level: graph.levels[index],
                 local: Self.localState(manifest.jobs[index].destination(in: manifest.outputDirectory),
                                        expectedSize: manifest.jobs[index].size))
        }
    }

    public func job(_ step: Step) -> Job {
        manifest.jobs[step.jobIndex]
    }

    /// The destination's absolute path, with environment-derived parts redacted.
    public func displayPath(_ step: Step) -> String {
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
