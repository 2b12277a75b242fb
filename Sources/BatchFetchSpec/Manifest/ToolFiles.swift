import Foundation

/// The files batchfetch itself keeps in `output_dir`, named once: the engine and the CLI write
/// them, and validation refuses a dest with one of these names (it would be overwritten by the
/// tool and then reported up to date).
package enum ToolFiles {
    /// The report of `run` (`--report` overrides it).
    package static let runReport = "batchfetch-report.json"
    /// The report of `check`.
    package static let checkReport = "batchfetch-check.json"
    /// The report of `verify`.
    package static let verifyReport = "batchfetch-verify.json"
    /// What earlier runs verified: the SQLite store (`StateCache`), its write-ahead log and
    /// shared memory, and the JSON file of earlier versions it is migrated from.
    package static let stateStore = ".batchfetch-state.sqlite"
    package static let stateStoreLog = ".batchfetch-state.sqlite-wal"
    package static let stateStoreMemory = ".batchfetch-state.sqlite-shm"
    package static let stateCache = ".batchfetch-state.json"
    /// The run lock (`RunLock`).
    package static let runLock = ".batchfetch.lock"

    package static let all = [runReport, checkReport, verifyReport, stateStore, stateStoreLog, stateStoreMemory, stateCache, runLock]

    /// Whether `name` is one of these files of a shard (``Shard/fileName(_:)``, e.g.
    /// `batchfetch-report.shard-0-of-4.json`), for any K and N. Cheap for other names: it runs
    /// for every dest of a million-job manifest.
    package static func isShardFile(_ name: String) -> Bool {
        shardNameParts.contains { prefix, suffix in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.utf8.count > prefix.utf8.count + suffix.utf8.count else {
                return false
            }
            let middle = name.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count)
            let numbers = middle.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
            return numbers.count == 3 && numbers[1].elementsEqual("of".utf8)
                && [numbers[0], numbers[2]].allSatisfy { !$0.isEmpty && $0.allSatisfy { (48...57).contains($0) } }
        }
    }

    /// Each tool file's shard name around `K-of-N`: `batchfetch-report.shard-` and `.json`.
    private static let shardNameParts: [(prefix: String, suffix: String)] = all.map { name in
        let marked = Shard(index: 0, count: 1)!.fileName(name)
        let range = marked.range(of: "shard-0-of-1")!
        return (String(marked[..<range.lowerBound]) + "shard-", String(marked[range.upperBound...]))
    }
}
