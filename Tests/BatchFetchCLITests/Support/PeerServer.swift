import Foundation

/// A real HTTP server of another kind than nginx on a free loopback port, serving a temporary
/// directory, with bodies paced so a test can kill a download midway:
/// - `python`: `python3 -m http.server`'s handler (no Range at all, Last-Modified only), paced by
///   Tests/Support/slow_http_server.py;
/// - `lighttpd`: Debian's lighttpd with `connection.kbytes-per-second` (Range, and as configured
///   here no ETag or Last-Modified: a resume cannot be validated, so nothing may be glued).
/// `.ci/run` installs both (scripts/install-deps.sh).
final class PeerServer {
    enum Kind: String, CaseIterable, CustomStringConvertible, Sendable {
        case python, lighttpd
        var description: String { rawValue }
    }

    let root: URL
    let port: Int
    private let prefix: URL
    private let process: Process

    static func binary(_ kind: Kind) -> String? {
        let candidates = kind == .python ? ["/usr/bin/python3", "/usr/local/bin/python3"] + Self.pathPython
            : ["/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static var pathPython: [String] {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/python3" }
    }

    /// Starts the server with bodies paced at `bytesPerSecond`.
    init(_ kind: Kind, bytesPerSecond: Int) throws {
        guard let binary = Self.binary(kind) else { throw NginxServer.NginxError.notInstalled }
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-\(kind)-\(UUID().uuidString)")
        root = prefix.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        port = try NginxServer.freePort()
        process = Process()
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
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try NginxServer.waitUntilListening(process, port: port)
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
