// nio-probe URL PATH: GET URL with AsyncHTTPClient, pwrite the body to PATH and sha256 it on a
// writer queue, with backpressure (the next read waits while more than 8 MiB are unwritten).
// Prints the sha256. Same work as batchfetch's single stream, minus resume and verification.
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore

final class FileWriter: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = String

    private let descriptor: Int32
    private let queue = DispatchQueue(label: "writer")
    private let lock = NSLock()
    private var pending = 0
    private var waiting: EventLoopPromise<Void>?
    private var offset: Int64 = 0
    private var hasher = SHA256()
    private static let limit = 8 << 20

    init(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }

    func didReceiveBodyPart(task: HTTPClient.Task<String>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let bytes = buffer.readableBytes
        let at = offset
        offset += Int64(bytes)
        let over: Bool = lock.withLock {
            pending += bytes
            return pending > Self.limit
        }
        let promise: EventLoopPromise<Void>? = over ? task.eventLoop.makePromise() : nil
        if let promise { lock.withLock { waiting = promise } }
        queue.async { [self] in
            buffer.withUnsafeReadableBytes { raw in
                var done = 0
                while done < raw.count {
                    let written = pwrite(descriptor, raw.baseAddress! + done, raw.count - done, off_t(at) + off_t(done))
                    if written <= 0 { break }
                    done += written
                }
                hasher.update(bufferPointer: raw)
            }
            let release: EventLoopPromise<Void>? = lock.withLock {
                pending -= bytes
                guard pending <= Self.limit / 2, let waiting else { return nil }
                self.waiting = nil
                return waiting
            }
            release?.succeed(())
        }
        return promise?.futureResult ?? task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<String>) throws -> String {
        queue.sync {
            close(descriptor)
            return hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: nio-probe URL PATH\n".utf8))
    exit(2)
}
let client = HTTPClient(eventLoopGroupProvider: .singleton)
let request = try HTTPClient.Request(url: arguments[1])
let digest = try client.execute(request: request, delegate: FileWriter(path: arguments[2])).wait()
try client.syncShutdown()
print(digest)
