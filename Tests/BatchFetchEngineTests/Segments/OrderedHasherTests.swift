@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Crypto
import Foundation
import Testing

/// The in-order hasher of segmented parts: the same digests as one pass, however the prefix grows.
@Suite struct OrderedHasherTests {
    @Test func theHasherFollowsTheWrittenPrefixToTheSameDigestAsOnePass() async throws {
        let url = try StateCacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let file = url.appendingPathComponent("f.part")
        try bytes.write(to: file)
        let descriptor = open(file.path, O_RDONLY)
        #expect(descriptor >= 0)
        let hasher = OrderedHasher(descriptor: descriptor, path: file.path, algorithms: [.md5])
        // The prefix grows in uneven steps, and may be reported again or out of order.
        for offset: Int64 in [100, 1_048_576, 1_000, 2_500_000, 2_500_000] { hasher.advance(to: offset) }
        let digests = try await hasher.finish(total: Int64(bytes.count)).get()
        #expect(digests["sha256"] == SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
        #expect(digests["md5"] == Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
    }
}
