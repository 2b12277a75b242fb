@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// The part read in order as it is written (``ArchiveStream``): blocks only of what the sink
/// wrote, the end once the archive is complete, and nothing more once a body starts below what
/// was read — those bytes are about to be written again.
@Suite struct ArchiveStreamTests {
    static func part(_ bytes: [UInt8]) throws -> Int32 {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bf-stream-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        unlink(path)
        return descriptor
    }

    @Test func itHandsOutWhatWasWrittenThenTheEnd() throws {
        let stream = ArchiveStream(descriptor: try Self.part(Array(0..<100)), written: 0)
        stream.bodyStarts(at: 0)
        stream.wrote(through: 40)
        #expect(stream.next().map(Array.init) == Array(0..<40))
        stream.wrote(through: 100)
        stream.finish(size: 100)
        #expect(stream.next().map(Array.init) == Array(40..<100))
        #expect(stream.next()?.count == 0)
    }

    @Test func aBodyThatStartsBelowWhatWasReadEndsIt() throws {
        let stream = ArchiveStream(descriptor: try Self.part(Array(0..<100)), written: 0)
        stream.wrote(through: 60)
        #expect(stream.next()?.count == 60)
        stream.bodyStarts(at: 60)  // a resume where the reader is: fine
        stream.wrote(through: 80)
        #expect(stream.next()?.count == 20)
        stream.bodyStarts(at: 0)  // a restart: what was read is written again
        stream.wrote(through: 100)
        #expect(stream.next() == nil)
        #expect(stream.wasAbandoned)
    }

    @Test func abandoningWakesAWaitingReader() async throws {
        let stream = ArchiveStream(descriptor: try Self.part(Array(0..<10)), written: 0)
        let reader = Task.detached { stream.next() == nil }
        stream.abandon()
        #expect(await reader.value)
    }
}
