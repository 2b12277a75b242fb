@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import Crypto
import Foundation
import Testing

/// The sink that writes a body into `.part` off the transport's queue: bytes in order, hashed
/// once, bounded by the body's end and by its memory cap.
@Suite struct FileSinkTests {
    /// A fresh file and a sink writing to it.
    static func sink(writeSize: Int = 64 << 10, memoryCap: Int = 1 << 20, writeRate: Int64? = nil,
                     flags: Int32 = O_RDWR, expectedSize: Int64? = nil) throws -> (FileSink, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bf-sink-\(UUID().uuidString)").path
        try #require(FileManager.default.createFile(atPath: path, contents: Data("prefix".utf8)))
        let descriptor = open(path, flags)
        try #require(descriptor >= 0)
        return (FileSink(descriptor: descriptor, partPath: path, algorithms: [.md5], writeSize: writeSize,
                         memoryCap: memoryCap, writeRate: writeRate, expectedSize: expectedSize), path)
    }

    static func bytes(_ count: Int, seed: UInt8 = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    @Test func aBodyIsWrittenInOrderAndHashedOnTheWay() async throws {
        let (sink, path) = try Self.sink()
        defer { unlink(path) }
        let body = Self.bytes(3 << 20)
        sink.begin(at: 0, end: nil)
        for start in stride(from: 0, to: body.count, by: 100_000) {
            let result = sink.append(body[start..<min(body.count, start + 100_000)])
            #expect(result != .stop)
            // As the owner does: a pause waits for the disk.
            if result == .pause { await sink.drain() }
        }
        await sink.drain()
        #expect(sink.flushedOffset == Int64(body.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == body)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined())
        #expect(sink.digests()["md5"] == Insecure.MD5.hash(data: body).map { String(format: "%02x", $0) }.joined())
    }

    /// The first buffer is sized by the manifest's `size`; a body larger than that (a wrong
    /// size, caught at verification) and deliveries larger than the buffer still go to disk whole.
    @Test func aBodyLargerThanTheExpectedSizeGrowsTheFirstBuffer() async throws {
        let (sink, path) = try Self.sink(expectedSize: 10)
        defer { unlink(path) }
        let body = Self.bytes(300_000, seed: 7)
        sink.begin(at: 0, end: nil)
        for start in stride(from: 0, to: body.count, by: 70_000) {
            #expect(sink.append(body[start..<min(body.count, start + 70_000)]) != .stop)
        }
        await sink.drain()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == body)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined())
    }

    /// A drain leaves the sink without a buffer until the next delivery, which then gets one of
    /// its size (a spare when there is one): deliveries after drains, small, larger than a full
    /// buffer and ones that do not fit, all reach the file in order.
    @Test func deliveriesAfterADrainGetABufferAgain() async throws {
        let (sink, path) = try Self.sink(writeSize: 64 << 10, expectedSize: 10)
        defer { unlink(path) }
        let pieces = [Self.bytes(10, seed: 1), Self.bytes(200_000, seed: 2), Self.bytes(5, seed: 3), Self.bytes(70_000, seed: 4),
                      Self.bytes(60_000, seed: 5), Self.bytes(1, seed: 6)]
        sink.begin(at: 0, end: nil)
        for (number, piece) in pieces.enumerated() {
            #expect(sink.append(piece) != .stop)
            if number.isMultiple(of: 2) { await sink.drain() }
        }
        await sink.drain()
        let body = pieces.reduce(Data(), +)
        #expect(sink.flushedOffset == Int64(body.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == body)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined())
    }

    /// An idle sink gives its buffers back (a segmented transfer writes through sinks of its
    /// own meanwhile) and still writes the body that continues afterwards, in place and hashed;
    /// asked while bytes wait for the disk, it loses none of them.
    @Test func anIdleSinkGivesItsBuffersBackAndWritesOnAfterwards() async throws {
        let (sink, path) = try Self.sink(writeSize: 64 << 10, writeRate: 256 << 10)
        defer { unlink(path) }
        let first = Self.bytes(300_000, seed: 1), rest = Self.bytes(200_000, seed: 2)
        sink.begin(at: 0, end: nil)
        #expect(sink.append(first) != .stop)
        sink.releaseBuffers()
        await sink.drain()
        let heldIdle = sink.heldBufferBytes
        sink.releaseBuffers()
        let heldAfterRelease = sink.heldBufferBytes
        sink.begin(at: Int64(first.count), end: nil)
        for start in stride(from: 0, to: rest.count, by: 50_000) {
            #expect(sink.append(rest[start..<min(rest.count, start + 50_000)]) != .stop)
        }
        await sink.drain()

        #expect(heldIdle > 0)
        #expect(heldAfterRelease == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == first + rest)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: first + rest).map { String(format: "%02x", $0) }.joined())
    }

    /// A part longer than where the body starts is cut there (one that already ends there is left
    /// alone): a short body leaves no old bytes behind.
    @Test func aShortBodyOverALongerPartLeavesNoOldBytes() async throws {
        let (sink, path) = try Self.sink(expectedSize: 3)
        defer { unlink(path) }
        sink.begin(at: 0, end: 3)
        #expect(sink.append(Data("new".utf8)) != .stop)
        await sink.drain()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("new".utf8))
        sink.begin(at: 3, end: 6)
        #expect(sink.append(Data("est".utf8)) != .stop)
        await sink.drain()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("newest".utf8))
    }

    /// Beginning a body only records where it starts; the part is made ready by the body's first
    /// write or by the drain: an empty body from byte 0 (a retry answered with nothing) still
    /// empties the part, and its digests are those of nothing.
    @Test func anEmptyBodyFromTheStartEmptiesThePart() async throws {
        let (sink, path) = try Self.sink(expectedSize: 3)
        defer { unlink(path) }
        sink.begin(at: 0, end: nil)
        await sink.drain()
        #expect(sink.flushedOffset == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: Data()).map { String(format: "%02x", $0) }.joined())
    }

    /// A drain with writes still queued waits for them (the last piece goes through the writer
    /// too); one with nothing queued writes on its caller's thread. Both leave the same file.
    @Test func aDrainBehindQueuedWritesWaitsForThem() async throws {
        // A slow disk (4 MiB/s) keeps the first buffers queued while the body ends.
        let (sink, path) = try Self.sink(writeSize: 64 << 10, memoryCap: 1 << 20, writeRate: 4 << 20)
        defer { unlink(path) }
        let body = Self.bytes(300_000, seed: 9)
        sink.begin(at: 0, end: nil)
        #expect(sink.append(body) != .stop)
        #expect(sink.unwrittenBytes > 0)
        await sink.drain()
        #expect(sink.unwrittenBytes == 0)
        #expect(sink.flushedOffset == Int64(body.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == body)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined())
    }

    @Test func aResumeReadsThePrefixBackOnceSoTheDigestsCoverTheWholeFile() async throws {
        let (sink, path) = try Self.sink()
        defer { unlink(path) }
        // "prefix" is on disk from an earlier run; the body continues at byte 6.
        sink.begin(at: 6, end: nil)
        #expect(sink.append(Data(" and the rest".utf8)) == .accepted)
        await sink.drain()
        let whole = Data("prefix and the rest".utf8)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == whole)
        #expect(sink.digests()["sha256"] == SHA256.hash(data: whole).map { String(format: "%02x", $0) }.joined())
    }

    @Test func bytesPastTheBodysEndAreCutOffAndReported() async throws {
        let (sink, path) = try Self.sink()
        defer { unlink(path) }
        sink.begin(at: 0, end: 10)
        #expect(sink.append(Data("0123456789abcdef".utf8)) == .stop)
        await sink.drain()
        #expect(sink.bodyTooLong)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("0123456789".utf8))
    }

    @Test func unwrittenBytesPastTheCapPauseAndPastTwiceTheCapStop() async throws {
        // A slow disk (64 KiB/s): what is appended now stays unwritten for a while.
        let (sink, path) = try Self.sink(writeSize: 16 << 10, memoryCap: 64 << 10, writeRate: 64 << 10)
        defer { unlink(path) }
        sink.begin(at: 0, end: nil)
        #expect(sink.append(Self.bytes(80 << 10)) == .pause)
        #expect(sink.append(Self.bytes(40 << 10)) == .pause)
        #expect(sink.append(Self.bytes(16 << 10)) == .pause)
        // 136 KiB unwritten is past twice the cap: nothing more is taken.
        #expect(sink.append(Self.bytes(1)) == .stop)
        await sink.drain()
        #expect(sink.flushedOffset == 136 << 10)
        #expect(!sink.bodyTooLong && sink.writeFailure == nil)
    }

    @Test func aFailedWriteIsRecordedAndStopsTheBody() async throws {
        let (sink, path) = try Self.sink(writeSize: 4, flags: O_RDONLY)
        defer { unlink(path) }
        sink.begin(at: 0, end: nil)
        _ = sink.append(Data("some bytes".utf8))
        await sink.drain()
        let failure = try #require(sink.writeFailure)
        #expect(failure.message.contains(path))
        #expect(sink.append(Data("more".utf8)) == .stop)
    }
}
