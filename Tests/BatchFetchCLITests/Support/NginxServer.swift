import Foundation
import TestOrigin

/// A real nginx on a free loopback port, serving a temporary directory: the real-world peer of
/// the interop tests. `.ci/run` installs Debian's nginx-light.
final class NginxServer {
    /// HTTPS (with HTTP/2 where the client offers it): the server's certificate and key, and
    /// the CA whose client certificates it requires, if any.
    struct TLS {
        var certificate: String
        var key: String
        var clientCA: String?
    }

    let root: URL
    let port: Int
    let tls: TLS?
    private let prefix: URL
    private let process: SpawnedProcess

    /// The nginx binary, if installed.
    static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/opt/homebrew/bin/nginx"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether tests must fail (rather than skip) when nginx is missing: set in CI.
    static var required: Bool { ProcessInfo.processInfo.environment["BATCHFETCH_REQUIRE_NGINX"] == "1" }

    /// Starts nginx with `limit_rate` applied under `/slow/`, over TLS when `tls` is given, with
    /// `locations` added to its server block.
    init(slowRate: String = "2m", tls: TLS? = nil, locations: String = "") async throws {
        guard let binary = Self.binary else { throw NginxError.notInstalled }
        self.tls = tls
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-nginx-\(UUID().uuidString)")
        root = prefix.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("slow"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        port = try Self.freePort()
        let p = prefix.path
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            error_log \(p)/error.log warn;
            pid \(p)/nginx.pid;
            events { worker_connections 128; }
            http {
                access_log \(p)/access.log;
                client_body_temp_path \(p)/tmp/body;
                proxy_temp_path \(p)/tmp/proxy;
                fastcgi_temp_path \(p)/tmp/fastcgi;
                uwsgi_temp_path \(p)/tmp/uwsgi;
                scgi_temp_path \(p)/tmp/scgi;
                sendfile on;
                server {
                    listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl http2");
                    \(tls.map { "ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                    \(tls?.clientCA.map { "ssl_client_certificate \($0); ssl_verify_client on;" } ?? "")
                    root \(root.path);
                    location /slow/ { limit_rate \(slowRate); }
                    \(locations)
                }
            }
            """
        try config.write(to: prefix.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", p, "-c", prefix.appendingPathComponent("nginx.conf").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Self.waitUntilListening(process, port: port)
    }

    func url(_ path: String) -> String {
        "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)\(path)"
    }

    /// Writes `data` at `path` under the served root.
    /// Writes a file to serve; `modified` sets its mtime (nginx's ETag and Last-Modified come
    /// from it), so a test can change them without waiting for the clock's next second.
    func write(_ path: String, _ data: Data, modified: Date? = nil) throws {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        if let modified { try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path) }
    }

    func accessLog() -> String {
        (try? String(contentsOf: prefix.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
    }

    /// SIGKILL: nginx started from the test process inherits a signal mask that blocks SIGTERM.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: prefix)
    }


    static func canConnect(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Ports handed out by ``freePort()`` in this process: the kernel may hand the same free port
    /// to two servers started a moment apart, and a test then talked to another test's server.
    nonisolated(unsafe) private static var handedOut: Set<Int> = []
    private static let portLock = NSLock()

    /// A port the kernel reports free now and no other server of this test process was given.
    static func freePort() throws -> Int {
        for _ in 0..<50 {
            let port = try kernelFreePort()
            let fresh = portLock.withLock { handedOut.insert(port).inserted }
            if fresh { return port }
        }
        throw NginxError.noPort
    }

    /// Waits until `process` listens on `port` and is still running a moment later (a server that
    /// lost the port to another exits at once, while the other answers the connection).
    static func waitUntilListening(_ process: SpawnedProcess, port: Int) async throws {
        try await offThePool { try poll(process, port: port) }
    }

    /// Up to a minute: moto's Python imports alone took over five seconds beside two CPU hogs;
    /// a server that exits ends the wait at once.
    private static func poll(_ process: SpawnedProcess, port: Int) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if canConnect(port: port) {
                Thread.sleep(forTimeInterval: 0.2)
                guard process.isRunning else { throw NginxError.exited("the server exited: port \(port) taken?") }
                return
            }
            guard process.isRunning else { throw NginxError.exited("the server exited before listening on \(port)") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw NginxError.notListening
    }

    /// A port the kernel reports free now (binding port 0, reading it, closing).
    private static func kernelFreePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw NginxError.noPort }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    enum NginxError: Error {
        case notInstalled, notListening, noPort
        case exited(String)
    }
}
