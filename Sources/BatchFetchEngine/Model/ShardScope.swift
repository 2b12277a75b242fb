import BatchFetchFiles
import BatchFetchObjectStore
import BatchFetchSpec

/// The part of a manifest a sharded command covers: the shard, and how many jobs the whole
/// manifest has — so `merge-reports` can tell a complete set of shard reports from an
/// incomplete one without the manifest (report v1 `shard`, Docs/Contracts.md §2, §7).
public struct ShardScope: Codable, Sendable, Equatable {
    public var shard: Shard
    public var manifestJobs: Int

    public init(shard: Shard, manifestJobs: Int) {
        self.shard = shard
        self.manifestJobs = manifestJobs
    }

    enum CodingKeys: String, CodingKey {
        case index, count, manifestJobs = "manifest_jobs"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let index = try container.decode(Int.self, forKey: .index)
        let count = try container.decode(Int.self, forKey: .count)
        guard let shard = Shard(index: index, count: count) else {
            throw DecodingError.dataCorruptedError(forKey: .index, in: container, debugDescription: "no shard \(index) of \(count)")
        }
        self.shard = shard
        manifestJobs = try container.decode(Int.self, forKey: .manifestJobs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shard.index, forKey: .index)
        try container.encode(shard.count, forKey: .count)
        try container.encode(manifestJobs, forKey: .manifestJobs)
    }
}

extension Optional where Wrapped == ShardScope {
    /// The name of one of the tool's files (``ToolFiles``) for this scope: the shard's own
    /// (`batchfetch-report.shard-0-of-4.json`), or the plain name for a whole-manifest command.
    package func toolFile(_ name: String) -> String {
        self.map { $0.shard.fileName(name) } ?? name
    }
}
