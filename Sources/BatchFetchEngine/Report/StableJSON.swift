import Foundation

/// The one JSON style of every file and output batchfetch writes (reports, sidecars,
/// `validate --format json`): sorted keys and indentation, so the same facts give the same bytes
/// and files diff cleanly.
public enum StableJSON {
    public static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// One line, keys sorted: for NDJSON (`run --events`).
    public static func line(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
