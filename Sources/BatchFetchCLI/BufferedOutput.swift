import Foundation

/// Collects output and writes it to stdout in large blocks.
///
/// `plan` on a large manifest prints tens of MiB; building one giant string first doubled peak
/// memory, and `print` per line costs a lock and a call each.
struct BufferedOutput: TextOutputStream {
    private var buffer: [UInt8] = []
    private let limit = 1 << 16

    init() {
        buffer.reserveCapacity(limit + 4096)
    }

    mutating func write(_ string: String) {
        buffer.append(contentsOf: string.utf8)
        if buffer.count >= limit { flush() }
    }

    mutating func flush() {
        buffer.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
