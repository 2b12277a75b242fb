// nio-probe URL PATH: GET URL with AsyncHTTPClient, pwrite the body to PATH and sha256 it on a
// writer queue, with backpressure (the next read waits while more than 8 MiB are unwritten).
// Prints the sha256. Same work as batchfetch's single stream, minus resume and verification.
//
// nio-probe [--publish] CONCURRENCY OUTPUT_DIR URL...: fetches every URL, at most CONCURRENCY at
// a time, on one AsyncHTTPClient (NIO's two-loop singleton group, CONCURRENCY connections per
// host), writing each body to OUTPUT_DIR/<last path component> on the event loop as it arrives,
// as curl does (open, write, close). No hashing, no verification, no rename, no report, no tasks:
// what is left is AsyncHTTPClient's and the kernel's cost, the floor of batchfetch's nio
// transport for many small files (bench/urlsession-probe.sh runs it).
//
// With --publish each body goes where batchfetch puts a small one and gets what batchfetch
// guarantees it, and nothing else: an unnamed file (O_TMPFILE) in OUTPUT_DIR, its sha256 computed
// on the way in, linked into place once complete, and one syncfs at the end (durability
// `batch`). The floor of the engine's small jobs: what is above it is the engine's own work.
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

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

/// Writes one body to its file as it arrives, on the event loop; starts the next URL when done.
final class ManyWriter: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Bool

    private let path: String
    private var descriptor: Int32 = -1
    private var status: UInt = 0

    /// --publish: the output directory (the unnamed file's and the link's) and the body's hash.
    private let directory: Int32?
    private var hasher = SHA256()

    /// --publish: the name the body is linked under in `directory`.
    private let name: String

    init(path: String, name: String, directory: Int32?) {
        self.path = path
        self.name = name
        self.directory = directory
    }

    func didReceiveHead(task: HTTPClient.Task<Bool>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = head.status.code
        if let directory {
            descriptor = openat(directory, ".", unnamedFileFlag | O_RDWR | O_CLOEXEC, 0o644)
        } else {
            descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Bool>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        buffer.withUnsafeReadableBytes {
            _ = write(descriptor, $0.baseAddress!, $0.count)
            if directory != nil { hasher.update(bufferPointer: $0) }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Bool>) throws -> Bool {
        var linked = true
        if let directory {
            _ = hasher.finalize()
            linked = linkat(descriptor, "", directory, name, emptyPathFlag) == 0
        }
        close(descriptor)
        return status == 200 && descriptor >= 0 && linked
    }
}

/// `O_TMPFILE` and `AT_EMPTY_PATH`, which Glibc's Swift module leaves out.
let unnamedFileFlag: Int32 = 0o20000000 | O_DIRECTORY
let emptyPathFlag: Int32 = 0x1000

/// Hands out the URLs, CONCURRENCY at a time, and counts what fails.
final class Batch: @unchecked Sendable {
    private let client: HTTPClient
    private let urls: [String]
    private let output: String
    /// --publish: the output directory, open.
    private let directory: Int32?
    private let lock = NSLock()
    private var next = 0
    private var running = 0
    private(set) var failures = 0
    let done = DispatchSemaphore(value: 0)

    init(client: HTTPClient, urls: [String], output: String, publish: Bool) {
        self.client = client
        self.urls = urls
        self.output = output
        directory = publish ? open(output, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : nil
    }

    /// --publish: one syncfs for the batch.
    func sync() {
        if let directory { _ = syncfs(directory) }
    }

    func startNext() {
        let index: Int? = lock.withLock {
            guard next < urls.count else { return nil }
            next += 1
            running += 1
            return next - 1
        }
        guard let index else { return }
        let url = urls[index]
        let name = String(url[url.index(after: url.lastIndex(of: "/")!)...])
        do {
            let request = try HTTPClient.Request(url: url)
            client.execute(request: request, delegate: ManyWriter(path: output + "/" + name, name: name, directory: directory)).futureResult.whenComplete { result in
                self.finished(ok: (try? result.get()) ?? false)
            }
        } catch {
            finished(ok: false)
        }
    }

    private func finished(ok: Bool) {
        let last: Bool = lock.withLock {
            running -= 1
            if !ok { failures += 1 }
            return running == 0 && next == urls.count
        }
        if last { done.signal() } else { startNext() }
    }
}

/// glibc declares syncfs(2) only under _GNU_SOURCE.
@_silgen_name("syncfs")
func syncfs(_ descriptor: Int32) -> Int32

var arguments = CommandLine.arguments
let publish = arguments.count > 1 && arguments[1] == "--publish"
if publish { arguments.remove(at: 1) }
if arguments.count >= 4, let concurrency = Int(arguments[1]), concurrency > 0 {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrency
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let batch = Batch(client: client, urls: Array(arguments[3...]), output: arguments[2], publish: publish)
    for _ in 0..<concurrency { batch.startNext() }
    batch.done.wait()
    batch.sync()
    try client.syncShutdown()
    if batch.failures > 0 {
        FileHandle.standardError.write(Data("\(batch.failures) failed\n".utf8))
        exit(1)
    }
    exit(0)
}
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: nio-probe URL PATH | nio-probe [--publish] CONCURRENCY OUTPUT_DIR URL...\n".utf8))
    exit(2)
}
let client = HTTPClient(eventLoopGroupProvider: .singleton)
let request = try HTTPClient.Request(url: arguments[1])
let digest = try client.execute(request: request, delegate: FileWriter(path: arguments[2])).wait()
try client.syncShutdown()
print(digest)
