@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
@testable import BatchFetchState
import Testing

/// The multipart upload's decisions without a store: take up an earlier upload, abort it, or
/// begin; which parts the store holds whole.
@Suite struct S3MultipartPlanTests {
    let mib: Int64 = 1 << 20

    @Test func anEarlierUploadIsTakenUpOnlyForTheSameFileCutTheSameWay() {
        let record = StateCache.MultipartRecord(uploadID: "u1", sha256: "aa", size: 100 * mib, partSize: 16 * mib)
        #expect(S3Multipart.firstStep(record: nil, sha256: "aa", size: 100 * mib, partSize: 16 * mib) == .begin)
        #expect(S3Multipart.firstStep(record: record, sha256: "aa", size: 100 * mib, partSize: 16 * mib) == .listParts(uploadID: "u1"))
        #expect(S3Multipart.firstStep(record: record, sha256: "bb", size: 100 * mib, partSize: 16 * mib) == .abortThenBegin(uploadID: "u1"))
        #expect(S3Multipart.firstStep(record: record, sha256: "aa", size: 101 * mib, partSize: 16 * mib) == .abortThenBegin(uploadID: "u1"))
        #expect(S3Multipart.firstStep(record: record, sha256: "aa", size: 100 * mib, partSize: 32 * mib) == .abortThenBegin(uploadID: "u1"))
    }

    @Test func onlyPartsHeldWholeAreKept() {
        // 40 MiB in 16 MiB parts: 16, 16 and 8.
        let listed: [Int: (etag: String, size: Int64)] = [1: ("e1", 16 * mib), 2: ("e2", 3 * mib), 3: ("e3", 8 * mib), 7: ("e7", mib)]
        #expect(S3Multipart.resumption(listed: listed, size: 40 * mib, partSize: 16 * mib) == .resume(done: [1: "e1", 3: "e3"]))
        #expect(S3Multipart.resumption(listed: [:], size: 40 * mib, partSize: 16 * mib) == .resume(done: [:]))
        // A listing that could not be had: the upload is given up, not guessed at.
        #expect(S3Multipart.resumption(listed: nil, size: 40 * mib, partSize: 16 * mib) == .abortThenBegin)
    }
}
