import Foundation
import TestOrigin

/// Runs the built `batchfetch` binary as a user would, capturing its output and exit status.
struct BinaryRunner {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static let repository: URL = {
        // The directory above `Tests/`, wherever this file sits below it.
        var url = URL(fileURLWithPath: #filePath)
        while url.lastPathComponent != "Tests" { url.deleteLastPathComponent() }
        return url.deletingLastPathComponent()
    }()
    static let fixtures = repository.appendingPathComponent("Tests/Fixtures")

    /// The binary next to the test bundle (`.build/<config>/batchfetch`), or `$BATCHFETCH_BIN`.
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["BATCHFETCH_BIN"] { return URL(fileURLWithPath: path) }
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("batchfetch")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("batchfetch")
    }()

    /// A minimal environment, plus the transport choice of the test run (`BATCHFETCH_TRANSPORT`).
    static var baseEnvironment: [String: String] {
        var env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        env["BATCHFETCH_TRANSPORT"] = ProcessInfo.processInfo.environment["BATCHFETCH_TRANSPORT"]
        // The tests count requests and gate origins; hedging is tested in the engine (MirrorsTests).
        env["BATCHFETCH_HEDGING"] = "off"
        return env
    }

    /// Starts `batchfetch arguments...` without waiting; output goes to files in `directory`.
    static func start(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> SpawnedProcess {
        let process = SpawnedProcess()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = baseEnvironment
        env.merge(environment) { _, new in new }
        process.environment = env
        // A file that cannot be made fails the FileHandle below, naming it.
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("stderr.log").path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: directory.appendingPathComponent("stderr.log"))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Sends `signal` to `process` as soon as `condition` holds (checked every 10 ms, at most
    /// `timeout` seconds), off the cooperative pool (`offThePool`): a test task woken seconds late
    /// saw the download finish before its kill. Returns whether the condition held; the signal is
    /// sent either way, `times` times 100 ms apart.
    static func signal(_ signal: Int32, to process: SpawnedProcess, times: Int = 1, timeout: Double = 120,
                       when condition: @escaping @Sendable () -> Bool) async -> Bool {
        let pid = process.processIdentifier
        return await offThePool {
            let held = poll(timeout: timeout, until: condition)
            for time in 0..<times {
                if time > 0 { Thread.sleep(forTimeInterval: 0.1) }
                kill(pid, signal)
            }
            return held
        }
    }

    /// Waits until `condition` holds, off the cooperative pool; returns false when it did not
    /// within `timeout` seconds, for the test to fail on.
    static func wait(timeout: Double = 120, until condition: @escaping @Sendable () -> Bool) async -> Bool {
        await offThePool { poll(timeout: timeout, until: condition) }
    }

    /// Waits for `process` to exit, off the cooperative pool.
    static func exit(of process: SpawnedProcess) async {
        await offThePool { process.waitUntilExit() }
    }

    /// Checks `condition` every 10 ms on the calling thread until it holds or `timeout` passes.
    private static func poll(timeout: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    /// Size of a regular file, 0 when missing.
    static func fileSize(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
    }

    /// Runs `batchfetch arguments...` in `directory` with `environment` added to a minimal one.
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) async throws -> Output {
        let run = try await ToolRun.run(binary, arguments, in: directory ?? repository,
                                        environment: baseEnvironment.merging(environment) { _, new in new })
        return Output(status: run.status, stdout: run.output, stderr: String(decoding: run.stderr, as: UTF8.self))
    }

    /// Runs Tests/Support/validate_with_schema.py (Python's jsonschema, independent of batchfetch)
    /// from the repository root; returns its exit status and output.
    static func validateWithSchema(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await tool(["python3", "Tests/Support/validate_with_schema.py"] + arguments)
    }

    /// Runs another program (found on PATH by `/usr/bin/env`) from the repository root, with
    /// `environment` added to the test's own (python3 may live where only it knows, pyenv's
    /// shims) and `input` as its stdin; returns its exit status and everything it printed
    /// (stdout, then stderr).
    static func tool(_ arguments: [String], input: URL? = nil, environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let run = try await ToolRun.run(arguments, in: repository,
                                        environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, input: input)
        return (run.status, run.output + String(decoding: run.stderr, as: UTF8.self))
    }
}

extension BinaryRunner {
    /// Runs the binary with stderr on a pseudo-terminal (stdout to /dev/null), as a person at a
    /// terminal would; returns the exit status and what the terminal received.
    static func runInTerminal(_ arguments: [String], in directory: URL) async throws -> (status: Int32, output: String) {
        try await offThePool { try terminal(arguments, in: directory) }
    }

    private static func terminal(_ arguments: [String], in directory: URL) throws -> (status: Int32, output: String) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, let name = ptsname(master) else {
            throw POSIXError(.ENOTTY)
        }
        let slave = open(String(cString: name), O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw POSIXError(.ENOTTY) }
        let process = SpawnedProcess()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = baseEnvironment.merging(["TERM": "xterm"]) { _, new in new }
        process.standardError = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        close(slave)
        nonisolated(unsafe) var received = Data()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {  // not the global queue's threads (see `offThePool`)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count <= 0 { break }  // EIO once the child has closed the terminal
                received.append(contentsOf: buffer[0..<count])
            }
            done.signal()
        }
        process.waitUntilExit()
        done.wait()
        close(master)
        return (process.terminationStatus, String(decoding: received, as: UTF8.self))
    }
}

// Glibc declares these only under _XOPEN_SOURCE, which Swift's Glibc module does not set.
@_silgen_name("grantpt") private func grantpt(_ descriptor: Int32) -> Int32
@_silgen_name("unlockpt") private func unlockpt(_ descriptor: Int32) -> Int32
@_silgen_name("ptsname") private func ptsname(_ descriptor: Int32) -> UnsafeMutablePointer<CChar>?
