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
}
