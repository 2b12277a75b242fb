import Foundation

/// The files batchfetch itself keeps in `output_dir`, named once: the engine and the CLI write
/// them, and validation refuses a dest with one of these names (it would be overwritten by the
/// tool and then reported up to date).
public enum ToolFiles {
    /// The report of `run` (`--report` overrides it).
    public static let runReport = "batchfetch-report.json"
    /// The report of `check`.
    public static let checkReport = "batchfetch-check.json"
    /// The report of `verify`.
    public static let verifyReport = "batchfetch-verify.json"
    /// What earlier runs verified (`StateCache`).
    public static let stateCache = ".batchfetch-state.json"
    /// The run lock (`RunLock`).
    public static let runLock = ".batchfetch.lock"

    public static let all = [runReport, checkReport, verifyReport, stateCache, runLock]

    /// Whether `name` is one of these files of a shard (``Shard/fileName(_:)``, e.g.
    /// `batchfetch-report.shard-0-of-4.json`), for any K and N.
    public static func isShardFile(_ name: String) -> Bool {
        all.contains { base in
            let marker = Shard(index: 0, count: 1)!.fileName(base)
            let (prefix, suffix) = marker.split(around: "shard-0-of-1")
            guard name.hasPrefix(prefix + "shard-"), name.hasSuffix(suffix),
                  name.count > prefix.count + suffix.count + "shard-".count else { return false }
            let middle = name.dropFirst(prefix.count + "shard-".count).dropLast(suffix.count)
            let numbers = middle.split(separator: "-of-", omittingEmptySubsequences: false)
            return numbers.count == 2 && numbers.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }
        }
    }
}

private extension String {
    /// The text before and after the first occurrence of `separator`, which must occur.
    func split(around separator: String) -> (String, String) {
        let range = self.range(of: separator)!
        return (String(self[..<range.lowerBound]), String(self[range.upperBound...]))
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
