import Foundation

/// Runs `body`, which blocks, on a thread of its own and gives back what it returns or throws.
///
/// Swift's cooperative pool has one thread per core. A test that waits on one of them for a
/// process, a pipe or a poll holds it for as long as that takes; two such tests on two cores stop
/// every other test's tasks (their engines, their `eventually` checks) until they end. A run
/// beside two CPU hogs was held that way for ten minutes by two CLI tests each waiting for an
/// upload, and the tests whose transfers stalled meanwhile failed. Whatever a test does that
/// blocks goes through here (or ``ToolRun``).
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// ``offThePool(_:)`` for work that cannot throw.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// A program a test ran to its end (``SpawnedProcess``), off the cooperative pool (``offThePool(_:)``): its exit
/// status and everything it printed on each stream.
public struct ToolRun: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data

    /// Standard output as text.
    public var output: String { String(decoding: stdout, as: UTF8.self) }

    /// Runs `executable arguments...` in `directory` (the current one when nil) with exactly
    /// `environment` (the test's own when nil) and the file at `input` as standard input.
    public static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil,
                           environment: [String: String]? = nil, input: URL? = nil) async throws -> ToolRun {
        try await offThePool {
            let process = SpawnedProcess()
            process.executableURL = executable
            process.arguments = arguments
            if let directory { process.currentDirectoryURL = directory }
            if let environment { process.environment = environment }
            let stdin = try input.map { try FileHandle(forReadingFrom: $0) }
            process.standardInput = stdin
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            // Both pipes are read at once so that a full stderr pipe cannot block the child.
            nonisolated(unsafe) var errData = Data()
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                errData = err.fileHandleForReading.readDataToEndOfFile()
                done.signal()
            }
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            done.wait()
            process.waitUntilExit()
            return ToolRun(status: process.terminationStatus, stdout: outData, stderr: errData)
        }
    }

    /// ``run(_:_:in:environment:input:)`` for a program found on `PATH` (through `/usr/bin/env`).
    public static func run(_ arguments: [String], in directory: URL? = nil,
                           environment: [String: String]? = nil, input: URL? = nil) async throws -> ToolRun {
        try await run(URL(fileURLWithPath: "/usr/bin/env"), arguments, in: directory, environment: environment, input: input)
    }
}
