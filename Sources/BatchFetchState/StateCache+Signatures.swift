import BatchFetchSpec
import Foundation
import GRDB

/// Signed checksum files verified by earlier runs (Docs/Signatures.md): by dest, the sha256 of
/// the file whose signature verified and who signed it. An up-to-date rerun of a signed file with
/// the same sha256 and a signer the manifest still accepts makes no request; any other file is
/// checked again.
extension StateCache {
    static let createSignatures = """
        CREATE TABLE signatures (
            dest TEXT NOT NULL PRIMARY KEY,
            sha256 TEXT NOT NULL,
            signer TEXT NOT NULL
        ) WITHOUT ROWID;
        """

    /// Who signed the file at `dest` when it had `sha256`, if a run verified it so.
    package func signer(of dest: String, sha256: String) -> Signer? {
        let text: String?? = try? database?.read { db in
            try String.fetchOne(db, sql: "SELECT signer FROM signatures WHERE dest = ? AND sha256 = ?", arguments: [dest, sha256])
        }
        guard let json = text ?? nil else { return nil }
        return try? JSONDecoder().decode(Signer.self, from: Data(json.utf8))
    }

    /// Records that the file at `dest` with `sha256` was verified as signed by `signer`, at once.
    package func recordSigner(_ signer: Signer, of dest: String, sha256: String) {
        guard let json = try? JSONEncoder().encode(signer) else { return }
        _ = try? database?.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO signatures (dest, sha256, signer) VALUES (?, ?, ?)",
                           arguments: [dest, sha256, String(decoding: json, as: UTF8.self)])
        }
    }
}
