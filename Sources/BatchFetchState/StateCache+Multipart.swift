import BatchFetchFiles
import Foundation
import GRDB

/// Multipart uploads to an object store that a run began and did not complete
/// (Docs/ObjectStores.md, "Uploads"): the store's upload id, and the file and part size it is
/// for, by the upload's state key. The next run asks the store which parts it holds (ListParts)
/// and sends only the rest; a record of another file, or one the store no longer knows, is
/// dropped and the upload begins anew.
extension StateCache {
    static let createMultipart = """
        CREATE TABLE multipart_uploads (
            target TEXT NOT NULL PRIMARY KEY,
            upload_id TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            part_size INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    package struct MultipartRecord: Sendable, Equatable {
        package var uploadID: String
        package var sha256: String
        package var size: Int64
        package var partSize: Int64

        package init(uploadID: String, sha256: String, size: Int64, partSize: Int64) {
            self.uploadID = uploadID
            self.sha256 = sha256
            self.size = size
            self.partSize = partSize
        }
    }

    /// The multipart upload begun for `target` (an upload's state key), if one is recorded.
    package func multipartUpload(_ target: String) -> MultipartRecord? {
        try? database?.read { db in
            try Row.fetchOne(db, sql: "SELECT upload_id, sha256, size, part_size FROM multipart_uploads WHERE target = ?",
                             arguments: [target]).map { MultipartRecord(uploadID: $0[0], sha256: $0[1], size: $0[2], partSize: $0[3]) }
        } ?? nil
    }

    /// Records (or, with nil, forgets) the multipart upload of `target`, at once: a kill right
    /// after the store made it must not lose its id.
    package func recordMultipartUpload(_ target: String, _ record: MultipartRecord?) {
        _ = try? database?.write { db in
            if let record {
                try db.execute(sql: "INSERT OR REPLACE INTO multipart_uploads (target, upload_id, sha256, size, part_size) VALUES (?, ?, ?, ?, ?)",
                               arguments: [target, record.uploadID, record.sha256, record.size, record.partSize])
            } else {
                try db.execute(sql: "DELETE FROM multipart_uploads WHERE target = ?", arguments: [target])
            }
        }
    }
}
