/// One part of a manifest split for many machines: shard `index` of `count`, 0-based as
/// Kubernetes and Slurm number their tasks (Docs/Contracts.md §7).
///
/// Every machine computes the same ``ShardAssignment`` from the same manifest, so no machine
/// needs to talk to another; the shard only says which part is this one's.
public struct Shard: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// The most shards a manifest can be split into; more would only name empty shards.
    public static let maximumCount = 100_000

    /// A shard, or nil unless `0 <= index < count <= maximumCount`.
    public init?(index: Int, count: Int) {
        guard count >= 1, count <= Self.maximumCount, index >= 0, index < count else { return nil }
        self.index = index
        self.count = count
    }

    /// Parses `K/N`, as given to `--shard` or in `BATCHFETCH_SHARD`.
    package static func parse(_ text: String) -> Result<Shard, ShardError> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            return .failure(ShardError("'\(text)' is not a shard: write K/N, e.g. 0/4 for the first of four"))
        }
        guard let shard = Shard(index: index, count: count) else {
            return .failure(ShardError(Self.rangeProblem(index: index, count: count, given: "'\(text)'")))
        }
        return .success(shard)
    }

    /// What is wrong with an index and count that make no shard.
    static func rangeProblem(index: Int, count: Int, given: String) -> String {
        if count < 1 || count > maximumCount { return "\(given): the shard count must be 1 to \(maximumCount)" }
        return "\(given): the shard index must be 0 to \(count - 1) (shards are numbered from 0)"
    }

    /// `K/N`.
    public var description: String { "\(index)/\(count)" }

    /// `shard-K-of-N`, the part of a shard's own file names (reports, run lock, state cache).
    public var fileTag: String { "shard-\(index)-of-\(count)" }

    /// A tool file's name for this shard: `batchfetch-report.json` → `batchfetch-report.shard-0-of-4.json`,
    /// `.batchfetch.lock` → `.batchfetch.shard-0-of-4.lock`.
    public func fileName(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name + "." + fileTag }
        return name[..<dot] + "." + fileTag + name[dot...]
    }
}

/// Why a shard could not be taken: a malformed `--shard`, or an environment that does not name one.
package struct ShardError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}
