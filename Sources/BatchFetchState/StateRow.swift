import BatchFetchFiles
import BatchFetchSpec
import GRDB

/// One row of the state store as a run holds it between opening the store and looking the row
/// up: about 160 bytes inline and, for nginx's and most servers' validators, nothing on the
/// heap, where a ``StateCache/Entry`` costs about 1 KB (a digest dictionary, three 64-digit hex
/// strings, a 29-byte date). A million-file rerun held a million of them.
///
/// Digests are kept as their bytes (``Checksum`` stores them so, and keeps anything that is not
/// hex of its algorithm's length as text), `Last-Modified` as a time when it is an IMF-fixdate
/// that reads back to the same text (``IMFFixdate``). ``entry`` gives the full entry back (hex
/// digits in lowercase, as batchfetch writes them).
package struct StateRow: Sendable {
    private let device: UInt64
    private let inode: UInt64
    private let size: Int64
    private let mtimeNanoseconds: Int64
    private let sha256: Checksum?
    /// The sha256 of the URL that served the file (a digest, so held as one).
    private let urlSHA256: Checksum?
    /// Digests besides sha256 (sha512, sha1, md5), rarely recorded.
    private let otherDigests: [Checksum]
    private let etag: String?
    private let lastModified: LastModified

    private enum LastModified: Sendable {
        case none
        case time(Int64)
        case text(String)
    }

    /// A row of the store's `files` table, its columns in ``StateCache``'s `selectRows` order.
    package init(_ row: Row) {
        device = UInt64(bitPattern: row[0])
        inode = UInt64(bitPattern: row[1])
        size = row[2]
        mtimeNanoseconds = row[3]
        sha256 = (row[4] as String?).map { Checksum(algorithm: .sha256, hex: $0) }
        var others: [Checksum] = []
        for (column, algorithm) in [(5, Checksum.Algorithm.sha512), (6, .sha1), (7, .md5)] {
            if let hex: String = row[column] { others.append(Checksum(algorithm: algorithm, hex: hex)) }
        }
        otherDigests = others
        urlSHA256 = (row[8] as String?).map { Checksum(algorithm: .sha256, hex: $0) }
        etag = row[9]
        if let text: String = row[10] {
            lastModified = IMFFixdate.parse(text).map(LastModified.time) ?? .text(text)
        } else {
            lastModified = .none
        }
    }

    /// The entry the row was made from.
    package var entry: StateCache.Entry {
        var digests: [String: String] = [:]
        if let sha256 { digests["sha256"] = sha256.hex }
        for digest in otherDigests { digests[digest.algorithm.rawValue] = digest.hex }
        let lastModified: String?
        switch self.lastModified {
        case .none: lastModified = nil
        case .time(let seconds): lastModified = IMFFixdate.format(seconds)
        case .text(let text): lastModified = text
        }
        return StateCache.Entry(device: device, inode: inode, size: size, mtimeNanoseconds: mtimeNanoseconds, digests: digests,
                                urlSHA256: urlSHA256?.hex, etag: etag, lastModified: lastModified)
    }
}
