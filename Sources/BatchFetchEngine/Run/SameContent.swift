import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

/// Jobs that fetch the same thing (same method, URLs, headers and body) to different
/// destinations: the first to start downloads; the others wait for it and then take its
/// published file (a hard link, or a copy), verified against their own size and checksums.
struct SameContent {
    /// A published file a twin takes its bytes from.
    struct Source: Sendable, Equatable {
        /// Its dest, relative to the output directory.
        var dest: String
        /// The job that published it.
        var id: String
    }

    private let jobs: [Job]
    /// The content key of each job that has a twin; a job without one (nearly every job of a
    /// large manifest) has no entry, so the table costs nothing per job.
    private let keys: [Int: String]
    /// Per key: the job downloading it, the jobs waiting for it, and its file once published.
    private var running: [String: Int] = [:]
    private var waiting: [String: [Int]] = [:]
    private var published: [String: Source] = [:]
    /// Twins handed back by ``finished(_:succeeded:)``, with the file to take (nil: download).
    private var released: [Int: Source?] = [:]

    init(jobs: [Job]) {
        // Uploads send, they fetch nothing: several POSTs to one endpoint are no twins.
        self.jobs = jobs
        // Only jobs that share their first URL can be twins: the full key (a string built per
        // job, five allocations) is made for those alone.
        var firstURLs: [String: Int] = [:]
        for job in jobs where !job.isUpload { firstURLs[job.url?.resolved ?? "", default: 0] += 1 }
        let keys = jobs.map { $0.isUpload || firstURLs[$0.url?.resolved ?? "", default: 0] < 2 ? nil : Self.key($0) }
        var counts: [String: Int] = [:]
        for case let key? in keys { counts[key, default: 0] += 1 }
        var twins: [Int: String] = [:]
        for (job, key) in keys.enumerated() {
            if let key, counts[key, default: 0] > 1 { twins[job] = key }
        }
        self.keys = twins
    }

    /// The published file of `job`.
    private func source(_ job: Int) -> Source {
        Source(dest: jobs[job].dest.resolved, id: jobs[job].id)
    }

    /// What a job asks the server for, as far as the content goes.
    private static func key(_ job: Job) -> String {
        let headers = job.headers.map { "\($0.name.lowercased()):\($0.value.resolved)" }.sorted()
        return ([job.method.rawValue] + job.urls.map(\.resolved) + headers + [job.body?.resolved ?? ""]).joined(separator: "\n")
    }

    enum Claim {
        /// Fetch it (nil) or take a twin's published file.
        case start(Source?)
        /// A twin (`behind`) is fetching the same content; the job is handed back when it finishes.
        case wait(behind: Int)
    }

    /// Called when `job` is about to start.
    mutating func claim(_ job: Int) -> Claim {
        guard let key = keys[job] else { return .start(nil) }
        if let source = released.removeValue(forKey: job) { return .start(source) }
        if let source = published[key] { return .start(source) }
        if let twin = running[key] {
            waiting[key, default: []].append(job)
            return .wait(behind: twin)
        }
        running[key] = job
        return .start(nil)
    }

    /// `job` finished: returns the twins that waited for it, to be scheduled again. After a
    /// success they take its file; after a failure each tries on its own.
    mutating func finished(_ job: Int, succeeded: Bool) -> [Int] {
        guard let key = keys[job], running[key] == job else { return [] }
        running[key] = nil
        let twins = waiting.removeValue(forKey: key) ?? []
        if succeeded { published[key] = source(job) }
        for twin in twins { released[twin] = succeeded ? source(job) : nil }
        return twins
    }
}
