import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// A job's report entry written directly, byte for byte what `JSONEncoder` (the report's
/// ``StableJSON`` style: sorted keys, pretty, slashes unescaped) makes of it at its place in the
/// report, for the entries that hold only strings, numbers and a map of digests: every
/// downloaded, up-to-date or skipped job. One with an error, an attempt log or mirror verdicts
/// or an extracted tree returns nil and goes through `JSONEncoder`.
///
/// Why: each job's entry is encoded as it finishes, and `JSONEncoder` with the re-indenting was
/// a large share of a small-file batch (bench/results/profile.md). `JobEntryTextTests` holds it
/// to the encoder's bytes on random jobs.
enum JobEntryText {
    /// The entry as an element of the report's `jobs` (depth 2), or nil when it has nested
    /// values.
    static func entry(_ job: RunReport.Job) -> [UInt8]? {
        guard job.error == nil, job.mirrors == nil, job.attemptLog == nil, job.extracted == nil, job.mirrorsUsed == nil else {
            return nil
        }
        var text = EntryTextWriter()
        text.bytes.reserveCapacity(512)
        text.raw("    {")
        // In the order of the keys' names (`.sortedKeys`).
        text.field("attempts", job.attempts)
        text.field("bytes_transferred", job.bytesTransferred)
        text.field("checksum_verified", job.checksumVerified)
        text.field("checksums", job.checksums)
        text.field("checksums_signed_by", job.checksumsSignedBy?.fields)
        text.field("copied_from", job.copiedFrom)
        text.field("deferred_because", job.deferredBecause)
        text.field("dest", job.dest)
        text.field("duration_seconds", job.durationSeconds)
        text.field("etag", job.etag)
        text.field("evidence", job.evidence)
        text.field("hedged", job.hedged)
        text.field("http_status", job.httpStatus)
        text.field("id", job.id)
        text.field("kind", job.kind)
        text.field("last_modified", job.lastModified)
        text.field("mirror_index", job.mirrorIndex)
        text.field("pieces_repaired", job.piecesRepaired)
        if let redirects = job.redirects {
            text.nested("redirects", "[", "]", redirects) { text, url in text.string(url) }
        }
        text.field("resumed_from", job.resumedFrom)
        text.field("segments", job.segments)
        text.field("signed_by", job.signedBy?.fields)
        text.field("size", job.size)
        text.field("skipped_because", job.skippedBecause)
        text.field("source", job.source?.rawValue)
        text.field("started_seconds", job.startedSeconds)
        text.field("status", job.status.rawValue)
        text.field("url", job.url)
        text.raw("\n    }")  // never empty: id, dest and status are always there
        return text.bytes
    }
}
