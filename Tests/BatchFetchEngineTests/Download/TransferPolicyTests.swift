@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import BatchFetchSpec
import Testing

/// How a job's bytes are asked for: segments, bounded ranges, and their sizes.
@Suite struct TransferPolicyTests {
    @Test func rangesAreAFairShareOfTheMemoryCapWithoutBackpressure() {
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 4, total: 1 << 30, backpressure: false) == 2 << 20)
        #expect(TransferPolicy.pieceSize(memoryCap: 64 << 20, segments: 4, total: nil, backpressure: false) == 16 << 20)
        // The job holds about its cap whatever the segment count, but a range is never below 512 KiB.
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 16, total: nil, backpressure: false) == 512 << 10)
        #expect(TransferPolicy.pieceSize(memoryCap: 4 << 20, segments: 16, total: nil, backpressure: false) == 512 << 10)
        #expect(TransferPolicy.connectionShare(memoryCap: 8 << 20, connections: 8) == 1 << 20)
    }

    @Test func withBackpressureRangesFollowTheFileSize() {
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 4, total: 1 << 30, backpressure: true) == 16 << 20)
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 4, total: 64 << 20, backpressure: true) == 4 << 20)
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 4, total: 1 << 20, backpressure: true) == 2 << 20)
        #expect(TransferPolicy.pieceSize(memoryCap: 8 << 20, segments: 4, total: nil, backpressure: true) == 16 << 20)
        // A sink that stops its reads needs half the share; never below 512 KiB.
        #expect(TransferPolicy.connectionShare(memoryCap: 8 << 20, connections: 4, backpressure: true) == 1 << 20)
        #expect(TransferPolicy.connectionShare(memoryCap: 8 << 20, connections: 16, backpressure: true) == 512 << 10)
    }

    @Test func boundedRangesFromTheStartWhenPacedOrWithoutBackpressure() {
        let unbounded = TransferPolicy(pauseChunk: 8 << 20, boundedBodies: false)
        #expect(!unbounded.boundsRanges(expectedSize: nil))
        let bounded = TransferPolicy(pauseChunk: 8 << 20, boundedBodies: true)
        #expect(bounded.boundsRanges(expectedSize: nil))
        #expect(bounded.boundsRanges(expectedSize: 9 << 20))
        // A body that fits the cap streams whole.
        #expect(!bounded.boundsRanges(expectedSize: 8 << 20))
        let paced = TransferPolicy(pauseChunk: 8 << 20, pacedChunk: 1 << 20)
        #expect(paced.boundsRanges(expectedSize: 100))
        #expect(paced.chunkSize == 1 << 20)
        #expect(bounded.chunkSize == 8 << 20)
    }
}
