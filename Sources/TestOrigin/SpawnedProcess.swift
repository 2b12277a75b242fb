import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process for tests, started with `posix_spawn`: the part of Foundation's `Process`
/// the tests use, without its Linux `run()`.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` to close the child's inherited
/// descriptors and copies each `dirent`'s whole 256-byte name, reading past glibc's buffer when
/// a short record ends it (swift-corelibs-foundation #5472, fixed after Swift 6.3.1). A test
/// process with a thousand descriptors open crashed there, taking every test with it. This one
/// has the child close them (`posix_spawn_file_actions_addclosefrom_np`), resets the signal mask
/// and dispositions the test process's threads changed (nginx once inherited a blocked SIGTERM),
/// and reaps the child without blocking a thread of the cooperative pool.
public final class SpawnedProcess: Sendable {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    private struct State {
        var executableURL: URL?
        var arguments: [String] = []
        var currentDirectoryURL: URL?
        var environment: [String: String]?
        var streams: [(any Sendable)?] = [nil, nil, nil]
        var pid: pid_t = 0
        /// The raw status `waitpid` gave once the child ended.
        var ended: Int32?
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    public var executableURL: URL? {
        get { state.withLockedValue { $0.executableURL } }
        set { state.withLockedValue { $0.executableURL = newValue } }
    }
    public var arguments: [String] {
        get { state.withLockedValue { $0.arguments } }
        set { state.withLockedValue { $0.arguments = newValue } }
    }
    public var currentDirectoryURL: URL? {
        get { state.withLockedValue { $0.currentDirectoryURL } }
        set { state.withLockedValue { $0.currentDirectoryURL = newValue } }
    }
    /// The child's whole environment; the test process's own when nil.
    public var environment: [String: String]? {
        get { state.withLockedValue { $0.environment } }
        set { state.withLockedValue { $0.environment = newValue } }
    }
    /// A `FileHandle` (`FileHandle.nullDevice` for /dev/null) or a `Pipe`; inherited when nil.
    public var standardInput: (any Sendable)? {
        get { state.withLockedValue { $0.streams[0] } }
        set { state.withLockedValue { $0.streams[0] = newValue } }
    }
    public var standardOutput: (any Sendable)? {
        get { state.withLockedValue { $0.streams[1] } }
        set { state.withLockedValue { $0.streams[1] = newValue } }
    }
    public var standardError: (any Sendable)? {
        get { state.withLockedValue { $0.streams[2] } }
        set { state.withLockedValue { $0.streams[2] = newValue } }
    }

    public var processIdentifier: Int32 { state.withLockedValue { $0.pid } }

    /// Starts the child; throws the `posix_spawn` error (the executable missing, say).
    public func run() throws {
        let settings = state.withLockedValue { $0 }
        guard let executable = settings.executableURL?.path else { throw POSIXError(.ENOENT) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var opened: [Int32] = []
        defer { for descriptor in opened { close(descriptor) } }
        for (target, stream) in zip(Int32(0)..., settings.streams) {
            guard let stream else { continue }
            let descriptor: Int32
            if let pipe = stream as? Pipe {
                descriptor = target == 0 ? pipe.fileHandleForReading.fileDescriptor : pipe.fileHandleForWriting.fileDescriptor
            } else if let handle = stream as? FileHandle, handle !== FileHandle.nullDevice {
                descriptor = handle.fileDescriptor
            } else {
                descriptor = open("/dev/null", target == 0 ? O_RDONLY : O_WRONLY)
                opened.append(descriptor)
            }
            posix_spawn_file_actions_adddup2(&actions, descriptor, target)
        }
        #if os(Linux)
        _ = addclosefrom(&actions, 3)
        #endif
        if let directory = settings.currentDirectoryURL?.path { _ = addchdir(&actions, directory) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + settings.arguments).map { strdup($0) } + [nil]
        let pairs = (settings.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = pairs.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        state.withLockedValue { $0.pid = child }
        // The child holds its ends of the pipes now: the parent's copies would keep a reader
        // from ever seeing the end of the output.
        for (target, stream) in zip(Int32(0)..., settings.streams) {
            guard let pipe = stream as? Pipe else { continue }
            try? (target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
        }
    }

    /// Whether the child has not ended yet (reaping it when it has).
    public var isRunning: Bool { state.withLockedValue { Self.reap(&$0) } == nil }

    /// Waits for the child to end, polling every 5 ms so that ``isRunning`` on another thread
    /// never waits behind it.
    public func waitUntilExit() {
        while state.withLockedValue({ Self.reap(&$0) }) == nil { usleep(5000) }
    }

    /// The exit code, or the signal that ended the child.
    public var terminationStatus: Int32 {
        let status = state.withLockedValue { $0.ended } ?? 0
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    public var terminationReason: TerminationReason {
        (state.withLockedValue { $0.ended } ?? 0) & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    public func terminate() { kill(processIdentifier, SIGTERM) }
    public func interrupt() { kill(processIdentifier, SIGINT) }

    /// The child's raw status once it has ended; nil while it runs.
    private static func reap(_ state: inout State) -> Int32? {
        if let ended = state.ended { return ended }
        guard state.pid > 0 else { return nil }
        var status: Int32 = 0
        if waitpid(state.pid, &status, WNOHANG) == state.pid { state.ended = status }
        return state.ended
    }
}

#if os(Linux)
// glibc declares these only under _GNU_SOURCE, which Swift's Glibc module does not set.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addclosefrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
#endif
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func addchdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32
