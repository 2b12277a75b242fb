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

    public struct Step: Sendable {
        public var job: Job
        public var level: Int
        /// Absolute destination path.
        public var path: String
        public var local: LocalState
    }

    public var manifest: Manifest
    public var graph: JobGraph
    public var steps: [Step]

    public init(manifest: Manifest) {
        self.manifest = manifest
        graph = JobGraph(manifest: manifest)
        let graph = self.graph
        steps = graph.order.map { index in
            let job = graph.jobs[index]
            let path = manifest.outputDirectory + "/" + job.dest.resolved
            return Step(job: job, level: graph.levels[index], path: path, local: Self.localState(path, job: job))
        }
    }

    private static func localState(_ path: String, job: Job) -> LocalState {
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            let bytes = Int64(info.st_size)
            return .present(bytes: bytes, sizeMatches: job.size.map { $0 == bytes })
        }
        if stat(path + ".part", &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            return .partial(bytes: Int64(info.st_size))
        }
        return .missing
    }
}
