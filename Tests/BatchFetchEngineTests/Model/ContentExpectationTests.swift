@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// One verification for publish, twin copies, the up-to-date check and `verify`.
@Suite struct ContentExpectationTests {
    static let sha = Checksum(algorithm: .sha256, hex: String(repeating: "a", count: 64))
    static let md5 = Checksum(algorithm: .md5, hex: String(repeating: "b", count: 32))

    @Test func sizeIsCheckedFirstThenEachChecksumInOrder() {
        let expectation = ContentExpectation(size: 10, checksums: [Self.md5, Self.sha], authority: .manifest)
        #expect(expectation.mismatch(size: 10, digests: ["md5": Self.md5.hex, "sha256": Self.sha.hex]) == nil)
        let size = expectation.mismatch(size: 11, digests: [:])
        #expect(size?.code == .sizeMismatch)
        #expect(size?.message == "11 bytes, the manifest says 10")
        let md5 = expectation.mismatch(size: 10, digests: ["md5": "c", "sha256": "d"])
        #expect(md5?.code == .checksumMismatch)
        #expect(md5?.message == "md5 is c, the manifest says \(Self.md5.hex)")
        #expect(expectation.mismatch(size: 10, digests: ["md5": Self.md5.hex])?.message.contains("not computed") == true)
    }

    @Test func theLocksExpectationsAreLockMismatches() {
        let entry = LockFile.Entry(dest: "a", size: 5, sha256: Self.sha.hex, mirrors: [])
        let lock = ContentExpectation(lock: entry)
        #expect(lock.sizeMismatch(6)?.code == .lockMismatch)
        #expect(lock.mismatch(size: 5, digests: ["sha256": "0"])?.message == "sha256 is 0, the lock says \(Self.sha.hex)")
        #expect(lock.mismatch(size: 5, digests: ["sha256": Self.sha.hex]) == nil)
    }

    @Test func theFirstFailingExpectationIsReported() {
        let manifest = ContentExpectation(size: nil, checksums: [], authority: .manifest)
        let server = ContentExpectation(size: 7, authority: .server)
        #expect(ContentExpectation.firstMismatch([manifest, server], size: 8, digests: [:])?.message
            == "8 bytes, the server announced 7")
        #expect(ContentExpectation.firstMismatch([manifest, server], size: 7, digests: [:]) == nil)
    }
}
