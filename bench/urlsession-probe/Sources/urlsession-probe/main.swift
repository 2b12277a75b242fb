// usage: urlsession-probe CONCURRENCY OUTPUT_DIR URL...
// Fetches every URL (at most CONCURRENCY at a time, one session, one delegate queue, as
// batchfetch's transport does), writing each body to OUTPUT_DIR/<last path component> as it
// arrives. No hashing, no verification, no rename, no report: what is left is URLSession's cost.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 4, let concurrency = Int(arguments[1]), concurrency > 0 else {
    FileHandle.standardError.write("usage: urlsession-probe CONCURRENCY OUTPUT_DIR URL...\n".data(using: .utf8)!)
    exit(2)
}
let output = arguments[2]
let urls = arguments[3...].compactMap(URL.init(string:))

/// Writes each task's body to its file; starts the next URL when one ends.
final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    var files: [Int: Int32] = [:]
    var next = 0
    var failures = 0
    var session: URLSession!
    let done = DispatchSemaphore(value: 0)
    var running = 0

    /// Called on the delegate queue (serial), as every other method here.
    func startNext() {
        guard next < urls.count else {
            if running == 0 { done.signal() }
            return
        }
        let url = urls[next]
        next += 1
        let task = session.dataTask(with: url)
        let descriptor = open(output + "/" + url.lastPathComponent, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        files[task.taskIdentifier] = descriptor
        running += 1
        task.resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let descriptor = files[dataTask.taskIdentifier] else { return }
        data.withUnsafeBytes { _ = write(descriptor, $0.baseAddress!, $0.count) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let descriptor = files.removeValue(forKey: task.taskIdentifier) { close(descriptor) }
        if error != nil || (task.response as? HTTPURLResponse)?.statusCode != 200 { failures += 1 }
        running -= 1
        startNext()
    }
}

let delegate = Delegate()
let queue = OperationQueue()
queue.maxConcurrentOperationCount = 1
let configuration = URLSessionConfiguration.default
configuration.urlCache = nil
configuration.httpMaximumConnectionsPerHost = concurrency
delegate.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
queue.addOperation { for _ in 0..<min(concurrency, urls.count) { delegate.startNext() } }
delegate.done.wait()
if delegate.failures > 0 {
    FileHandle.standardError.write("\(delegate.failures) failed\n".data(using: .utf8)!)
    exit(1)
}
