import Foundation
import TestOrigin

/// A Python helper of Tests/Support on a free loopback port — moto's S3 server, the multipart
/// form receiver — started for one test and killed after it; and the helpers' one-shot commands.
final class PythonService {
    let port: Int
    private let process: SpawnedProcess

    /// Whether `python3` can import `modules` (the helpers need them; `.ci/run` installs them).
    static func available(_ modules: String) async -> Bool {
        (try? await command(["-c", "import \(modules)"]))?.status == 0
    }

    /// Starts `python3 Tests/Support/<script> <arguments with {port} replaced>` and waits until it
    /// listens.
    init(_ script: String, _ arguments: [String]) async throws {
        port = try NginxServer.freePort()
        process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script(script)] + arguments.map { $0.replacingOccurrences(of: "{port}", with: "\(port)") }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await NginxServer.waitUntilListening(process, port: port)
    }

    func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Runs `python3 Tests/Support/<script> arguments...`; its status and standard output (and,
    /// when it failed, its standard error).
    static func run(_ script: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await command([Self.script(script)] + arguments)
    }

    private static func script(_ name: String) -> String {
        BinaryRunner.repository.appendingPathComponent("Tests/Support/\(name)").path
    }

    private static func command(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let run = try await ToolRun.run(["python3"] + arguments)
        // A failure's traceback is its message.
        let output = run.status == 0 ? run.output : run.output + String(decoding: run.stderr, as: UTF8.self)
        return (run.status, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
