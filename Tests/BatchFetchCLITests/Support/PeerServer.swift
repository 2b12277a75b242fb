import Foundation
import TestOrigin

/// A real HTTP server of another kind than nginx on a free loopback port, serving a temporary
/// directory, with bodies paced so a test can kill a download midway:
/// - `python`: `python3 -m http.server`'s handler (no Range at all, Last-Modified only), paced by
///   Tests/Support/slow_http_server.py;
/// - `lighttpd`: Debian's lighttpd with `connection.kbytes-per-second` (Range, and as configured
///   here no ETag or Last-Modified: a resume cannot be validated, so nothing may be glued);
/// - `plainPython`: `python3 -m http.server` itself, unpaced (no Range, `HTTP/1.0` answers);
/// - `caddy`: Debian's caddy 2.6 `file_server` (Range with ETag; any range of an empty file is
///   answered `416` with `Content-Range: bytes */0` and a text body). Unpaced.
/// `.ci/run` installs them (scripts/install-deps.sh).
final class PeerServer {
    enum Kind: String, CaseIterable, CustomStringConvertible, Sendable {
        case python, lighttpd, plainPython, caddy
        var description: String { rawValue }
        /// The kinds that pace their bodies, so that a download can be killed midway.
        static let paced: [Kind] = [.python, .lighttpd]
    }

    let root: URL
    let port: Int
    private let prefix: URL
    private let process: SpawnedProcess

    static func binary(_ kind: Kind) -> String? {
        let candidates: [String]
        switch kind {
        case .python, .plainPython: candidates = ["/usr/bin/python3", "/usr/local/bin/python3"] + Self.pathPython
        case .lighttpd: candidates = ["/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd"]
        case .caddy: candidates = ["/usr/bin/caddy", "/usr/local/bin/caddy"]
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static var pathPython: [String] {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/python3" }
    }

    /// Starts the server with bodies paced at `bytesPerSecond` (the paced kinds only).
    init(_ kind: Kind, bytesPerSecond: Int = 0) async throws {
        guard let binary = Self.binary(kind) else { throw NginxServer.NginxError.notInstalled }
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-\(kind)-\(UUID().uuidString)")
        root = prefix.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        port = try NginxServer.freePort()
        process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        switch kind {
        case .python:
            let script = BinaryRunner.repository.appendingPathComponent("Tests/Support/slow_http_server.py")
            process.arguments = [script.path, String(port), root.path, String(bytesPerSecond)]
        case .lighttpd:
            let config = """
                server.document-root = "\(root.path)"
                server.port = \(port)
                server.bind = "127.0.0.1"
                server.errorlog = "\(prefix.path)/error.log"
                connection.kbytes-per-second = \(bytesPerSecond / 1024)
                """
            try config.write(to: prefix.appendingPathComponent("lighttpd.conf"), atomically: true, encoding: .utf8)
            process.arguments = ["-D", "-f", prefix.appendingPathComponent("lighttpd.conf").path]
        case .plainPython:
            process.arguments = ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", root.path]
        case .caddy:
            let config = """
                {
                  admin off
                  auto_https off
                  storage file_system \(prefix.path)/storage
                }
                http://127.0.0.1:\(port) {
                  root * \(root.path)
                  file_server
                }
                """
            try config.write(to: prefix.appendingPathComponent("Caddyfile"), atomically: true, encoding: .utf8)
            process.arguments = ["run", "--config", prefix.appendingPathComponent("Caddyfile").path, "--adapter", "caddyfile"]
            // Caddy keeps its state under XDG directories: in the test's prefix, not $HOME.
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_DATA_HOME"] = prefix.appendingPathComponent("data").path
            environment["XDG_CONFIG_HOME"] = prefix.appendingPathComponent("config").path
            process.environment = environment
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await NginxServer.waitUntilListening(process, port: port)
    }

    func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// Writes `data` at `path` under the served root, with its mtime `age` seconds in the past
    /// (Last-Modified has one-second resolution: a rewrite must show a new one).
    func write(_ path: String, _ data: Data, age: TimeInterval) throws {
        let file = root.appendingPathComponent(path)
        try data.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: file.path)
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: prefix)
    }
}
