import Foundation

/// A job's report entry written directly, byte for byte what `JSONEncoder` (the report's
/// ``StableJSON`` style: sorted keys, pretty, slashes unescaped) makes of it at its place in the
/// report, for the entries that hold only strings, numbers and a map of digests: every
/// downloaded, up-to-date or skipped job. One with an error, an attempt log or mirror verdicts
/// returns nil and goes through `JSONEncoder`.
///
/// Why: each job's entry is encoded as it finishes, and `JSONEncoder` with the re-indenting was
/// 6% of the CPU of 20,000 small files (bench/results/profile.md). `JobEntryTextTests` holds it
/// to the encoder's bytes on random jobs.
enum JobEntryText {
    /// The entry as an element of the report's `jobs` (depth 2), or nil when it has nested
    /// values.
    static func entry(_ job: RunReport.Job) -> [UInt8]? {
        guard job.error == nil, job.mirrors == nil, job.attemptLog == nil else { return nil }
        var text = Text()
        text.bytes.reserveCapacity(512)
        text.raw("    {")
        // In the order of the keys' names (`.sortedKeys`).
        text.field("attempts", job.attempts)
        text.field("bytes_transferred", job.bytesTransferred)
        text.field("checksum_verified", job.checksumVerified)
        if let checksums = job.checksums?.sorted(by: { $0.key < $1.key }) {
            text.nested("checksums", "{", "}", checksums) { text, entry in
                text.string(entry.key)
                text.raw(" : ")
                text.string(entry.value)
            }
        }
        text.field("copied_from", job.copiedFrom)
        text.field("dest", job.dest)
        text.field("duration_seconds", job.durationSeconds)
        text.field("etag", job.etag)
        text.field("evidence", job.evidence)
        text.field("http_status", job.httpStatus)
        text.field("id", job.id)
        text.field("kind", job.kind)
        text.field("last_modified", job.lastModified)
        text.field("mirror_index", job.mirrorIndex)
        if let redirects = job.redirects {
            text.nested("redirects", "[", "]", redirects) { text, url in text.string(url) }
        }
        text.field("resumed_from", job.resumedFrom)
        text.field("segments", job.segments)
        text.field("size", job.size)
        text.field("skipped_because", job.skippedBecause)
        text.field("status", job.status.rawValue)
        text.field("url", job.url)
        text.raw("\n    }")  // never empty: id, dest and status are always there
        return text.bytes
    }

    /// The text being written, and how many fields it has.
    private struct Text {
        var bytes: [UInt8] = []
        var fields = 0

        mutating func raw(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        /// `"name" : `, after a comma when a field came before.
        mutating func key(_ name: StaticString) {
            raw(fields == 0 ? "\n      \"" : ",\n      \"")
            raw(name)
            raw("\" : ")
            fields += 1
        }

        /// `"name" : ` and an object or array (`open`, `close`) of `elements`, one a line (an
        /// empty one with a blank line, as the pretty encoder prints it).
        mutating func nested<Element>(_ name: StaticString, _ open: StaticString, _ close: StaticString,
                                      _ elements: [Element], _ write: (inout Text, Element) -> Void) {
            key(name)
            raw(open)
            for (position, element) in elements.enumerated() {
                raw(position == 0 ? "\n        " : ",\n        ")
                write(&self, element)
            }
            raw(elements.isEmpty ? "\n\n      " : "\n      ")
            raw(close)
        }

        mutating func field(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            string(value)
        }

        mutating func field(_ name: StaticString, _ value: Int?) {
            guard let value else { return }
            key(name)
            bytes.append(contentsOf: String(value).utf8)
        }

        mutating func field(_ name: StaticString, _ value: Int64?) {
            guard let value else { return }
            key(name)
            bytes.append(contentsOf: String(value).utf8)
        }

        mutating func field(_ name: StaticString, _ value: Bool?) {
            guard let value else { return }
            key(name)
            if value { raw("true") } else { raw("false") }
        }

        /// A number as the encoder writes it: Swift's shortest form without a trailing `.0`.
        mutating func field(_ name: StaticString, _ value: Double?) {
            guard let value else { return }
            key(name)
            var text = value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            bytes.append(contentsOf: text.utf8)
        }

        /// A JSON string: `"` and `\` escaped, control characters as `\n`-style or `\u00xx`
        /// escapes, everything else (slashes, non-ASCII) as it is.
        mutating func string(_ value: String) {
            bytes.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case 0x08: raw("\\b")
                case 0x09: raw("\\t")
                case 0x0A: raw("\\n")
                case 0x0C: raw("\\f")
                case 0x0D: raw("\\r")
                case 0..<0x20:
                    raw("\\u00")
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0xF)])
                default: bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
