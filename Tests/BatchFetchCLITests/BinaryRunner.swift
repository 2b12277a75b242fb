import Foundation

/// Runs the built `batchfetch` binary as a user would, capturing its output and exit status.
struct BinaryRunner {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
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

    /// Starts `batchfetch arguments...` without waiting; output goes to files in `directory`.
    static func start(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        env.merge(environment) { _, new in new }
        process.environment = env
        FileManager.default.createFile(atPath: directory.appendingPathComponent("stderr.log").path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: directory.appendingPathComponent("stderr.log"))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `batchfetch arguments...` in `directory` with `environment` added to a minimal one.
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory ?? repository
        var env = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        env.merge(environment) { _, new in new }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes concurrently so a full stderr pipe cannot block the child.
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs Tests/Support/validate_with_schema.py (Python's jsonschema, independent of batchfetch)
    /// from the repository root; returns its exit status and output.
    static func validateWithSchema(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "Tests/Support/validate_with_schema.py"] + arguments
        process.currentDirectoryURL = repository
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
