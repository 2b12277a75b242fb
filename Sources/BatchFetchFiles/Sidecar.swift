import Foundation

/// The sidecar `<dest>.part.json`: which remote content the bytes in `<dest>.part` belong to.
///
/// The resolved URL may carry a token, so the sidecar holds its redacted form for people and its
/// sha256 for matching.
package struct Sidecar: Codable, Sendable, Equatable {
    package var version = 1
    package var url: String
    package var urlSHA256: String
    package var etag: String?
    package var lastModified: String?
    package var totalSize: Int64?
    /// For a segmented download, the byte ranges of `.part` already written (the file itself is
    /// preallocated to the total size); nil for a single stream, whose file size is its progress.
    package var rangesDone: ByteRanges?
    /// The inode of the part this sidecar describes, recorded when it is written
    /// (``PartialFiles/writeSidecar(_:)``): a later run resumes only the same file. Why: the
    /// name `<dest>.part` can come to lead to another file — one renamed over it by another
    /// process mid-run (the job then fails `in_use` and leaves the name to it) — and resuming
    /// that file's bytes under this sidecar's validators would publish a mix of the two. Nil in
    /// sidecars of earlier versions, which are trusted as before.
    package var partInode: UInt64?
    /// For a segmented download from several mirrors (`sources: all`), which of ``rangesDone``
    /// each mirror wrote, by the job's mirror index: a resumed piece that proves bad is blamed
    /// on the mirror that served it. Nil when one mirror wrote everything.
    package var rangesFrom: [String: ByteRanges]?

    package init(url: String, urlSHA256: String, etag: String?, lastModified: String?, totalSize: Int64?,
                rangesDone: ByteRanges? = nil) {
        self.url = url
        self.urlSHA256 = urlSHA256
        self.etag = etag
        self.lastModified = lastModified
        self.totalSize = totalSize
        self.rangesDone = rangesDone
    }

    package enum CodingKeys: String, CodingKey {
        case version, url, urlSHA256 = "url_sha256", etag, lastModified = "last_modified", totalSize = "total_size"
        case rangesDone = "ranges_done", partInode = "part_inode", rangesFrom = "ranges_from"
    }

    /// What `If-Range` carries: the strong ETag, else Last-Modified.
    package var ifRangeValue: String? { etag ?? lastModified }
}

/// What is on disk for a job when it starts.
package struct LocalPartial: Sendable, Equatable {
    /// How many bytes from the start of `<dest>.part` are written: its size for a single stream,
    /// the written prefix for a segmented one.
    package var bytes: Int64
    package var sidecar: Sidecar?

    package init(bytes: Int64, sidecar: Sidecar?) {
        self.bytes = bytes
        self.sidecar = sidecar
    }

    /// A partial from a segmented download: `fileSize` is the preallocated size, and only the
    /// ranges the sidecar lists (and the file holds) count.
    package init(fileSize: Int64, sidecar: Sidecar?) {
        if let done = sidecar?.rangesDone {
            var sidecar = sidecar
            sidecar?.rangesDone = done.clipped(to: fileSize)
            self.init(bytes: sidecar?.rangesDone?.prefix ?? 0, sidecar: sidecar)
        } else {
            self.init(bytes: fileSize, sidecar: sidecar)
        }
    }

    /// Bytes written anywhere in the part, for a segmented partial.
    package var segmentedBytes: Int64 { sidecar?.rangesDone?.count ?? bytes }
}
