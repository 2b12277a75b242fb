import Foundation

/// Buffered sequential writes to an open descriptor, for files written as a stream of pieces
/// (the report, the state cache): one `write(2)` per 256 KiB instead of one whole `Data` of the
/// file in memory (a 20,000-job report is 10 MB of text, and `JSONEncoder` needs several times
/// that to make it at once).
package struct FileWriter: ~Copyable {
    private let descriptor: Int32
    /// For messages only.
    private let name: String
    private var buffer: [UInt8] = []
    private static let flushSize = 256 << 10

    package init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
        buffer.reserveCapacity(Self.flushSize)
    }

    /// Appends `bytes`, writing out the buffer whenever it is full.
    package mutating func write(_ bytes: some Sequence<UInt8>) throws(BatchFetchError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= Self.flushSize { try flush() }
    }

    package mutating func write(_ text: String) throws(BatchFetchError) {
        try write(text.utf8)
    }

    /// Writes out what is buffered.
    package mutating func flush() throws(BatchFetchError) {
        let failed = buffer.withUnsafeBytes { bytes -> Int32? in
            var done = 0
            while done < bytes.count {
                let count = Foundation.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { return errno }
                if count == 0 { return EIO }
                done += count
            }
            return nil
        }
        buffer.removeAll(keepingCapacity: true)
        if let failed { throw FileSink.failure(failed, "cannot write \(name)") }
    }
}
