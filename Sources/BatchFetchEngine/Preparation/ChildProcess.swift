import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation
#if os(Linux)
import CBatchFetchSystem
#endif
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// A program run without a shell (`posix_spawnp`, the words as its arguments; a relative
/// program was made absolute against the manifest's directory by validation), stdin
/// `/dev/null` or a file, in a process group of its own so that a timeout kills everything it started:
/// external resolvers (Docs/Sources.md), hook commands (Docs/Hooks.md) and the signature tools
/// `gpgv` and `ssh-keygen` (Docs/Signatures.md). Written here rather
/// than with Foundation's `Process`, which cannot start a process group.
enum ChildProcess {
    /// How a run of a program ended.
    struct Ended: Sendable {
        /// Its stdout; nil past the output limit.
        var stdout: Data?
        /// Its stderr, up to 1 MiB.
        var stderr: Data
        /// Its exit code, when it exited.
        var exitCode: Int32?
        /// The signal that killed it, when one did.
        var signal: Int32?
        /// It did not finish within the timeout and was killed.
        var timedOut = false
        /// It was killed because `stopWhen` said so (the run was interrupted).
        var stopped = false
        /// It could not be started, and why.
        var notStarted: String?

        /// The last line of its stderr, for a message.
        var lastErrorLine: String? {
            String(decoding: stderr, as: UTF8.self).split(whereSeparator: \.isNewline).last.map { String($0.prefix(500)) }
        }
    }

    /// Runs `command` with `environment` (nil: batchfetch's own) in `directory` (nil:
    /// batchfetch's working directory), the file at `input` (nil: `/dev/null`) as stdin, killing its process group after `timeout` seconds, or as
    /// soon as `stopWhen` (asked every 100 ms) says so.
    static func run(_ command: [String], timeout: Double, environment: [String: String]? = nil, directory: String? = nil,
                    input: String? = nil, outputLimit: Int, stopWhen: (@Sendable () -> Bool)? = nil) async -> Ended {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: runBlocking(command, timeout: timeout, environment: environment, directory: directory,
                                                           input: input, outputLimit: outputLimit, stopWhen: stopWhen))
            }
        }
    }

    private static func runBlocking(_ command: [String], timeout: Double, environment: [String: String]?, directory: String?,
                                    input: String?, outputLimit: Int, stopWhen: (@Sendable () -> Bool)?) -> Ended {
        var output: [Int32] = [0, 0], errors: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { return Ended(stderr: Data(), notStarted: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&errors) == 0 else {
            close(output[0]); close(output[1])
            return Ended(stderr: Data(), notStarted: "pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        for descriptor in output + errors { posix_spawn_file_actions_addclose(&actions, descriptor) }
        if let directory {
            #if os(Linux)
            batchfetch_spawn_chdir(&actions, directory)
            #else
            posix_spawn_file_actions_addchdir_np(&actions, directory)
            #endif
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        let arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        let variables: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for variable in variables ?? [] { free(variable) } }
        var pid: pid_t = 0
        #if canImport(Glibc)
        let inherited = Glibc.environ
        #else
        let inherited = environ
        #endif
        let spawned = variables.map { posix_spawnp(&pid, command[0], &actions, &attributes, arguments, $0) }
            ?? posix_spawnp(&pid, command[0], &actions, &attributes, arguments, inherited)
        close(output[1])
        close(errors[1])
        guard spawned == 0 else {
            close(output[0]); close(errors[0])
            return Ended(stderr: Data(), notStarted: "could not start \(command[0]): \(String(cString: strerror(spawned)))")
        }
        // Past the deadline the whole group is killed, which closes the pipes it held.
        let fired = NIOLockedValueBox(false)
        let killer = DispatchWorkItem {
            fired.withLockedValue { $0 = true }
            kill(-pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        let stopped = NIOLockedValueBox(false)
        let watcher = stopWhen.map { stopWhen in
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now(), repeating: .milliseconds(100))
            timer.setEventHandler {
                guard stopWhen(), !stopped.withLockedValue({ $0 }) else { return }
                stopped.withLockedValue { $0 = true }
                kill(-pid, SIGKILL)
            }
            timer.resume()
            return timer
        }
        let stderrText = NIOLockedValueBox(Data?.none)
        let reading = DispatchGroup()
        let errorDescriptor = errors[0]
        DispatchQueue.global().async(group: reading) { stderrText.withLockedValue { $0 = readAll(errorDescriptor, limit: 1 << 20) } }
        let stdoutData = readAll(output[0], limit: outputLimit)
        reading.wait()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        killer.cancel()
        watcher?.cancel()
        close(output[0])
        close(errors[0])
        var ended = Ended(stdout: stdoutData, stderr: stderrText.withLockedValue { $0 } ?? Data())
        ended.timedOut = fired.withLockedValue { $0 }
        ended.stopped = stopped.withLockedValue { $0 }
        if isKilled(status) { ended.signal = status & 0x7F } else { ended.exitCode = (status >> 8) & 0xFF }
        return ended
    }

    private static func isKilled(_ status: Int32) -> Bool {
        (status & 0x7F) != 0 && (status & 0x7F) != 0x7F
    }

    /// Everything a descriptor gives until its end; nil past `limit` (the rest still drained so
    /// the writer is not blocked).
    private static func readAll(_ descriptor: Int32, limit: Int) -> Data? {
        var data = Data()
        var overflowed = false
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            if data.count + count > limit { overflowed = true } else if !overflowed {
                data.append(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
            }
        }
        return overflowed ? nil : data
    }
}

/// Runs an external resolver (Docs/Sources.md, "External resolvers") in batchfetch's working
/// directory and gives its stdout, or why not with the last line of its stderr.
enum ResolverProcess {
    /// What a resolver may print on stdout; more is an error (a listing of a million files is
    /// about 200 MB, far past any source a manifest names).
    static let outputLimit = 256 << 20

    /// Its stdout when it exits 0 within `timeout` seconds; else why not.
    static func run(_ command: [String], timeout: Double) async -> Result<Data, SourceProblem> {
        let ended = await ChildProcess.run(command, timeout: timeout, outputLimit: outputLimit)
        if let notStarted = ended.notStarted { return .failure(SourceProblem(notStarted.hasPrefix("pipe") ? "could not start: \(notStarted)" : notStarted)) }
        let said = ended.lastErrorLine.map { ": \($0)" } ?? ""
        if ended.timedOut { return .failure(SourceProblem("did not finish within \(Int(timeout)) s (killed)\(said)")) }
        guard let stdout = ended.stdout else { return .failure(SourceProblem("printed more than \(outputLimit) bytes")) }
        if let signal = ended.signal { return .failure(SourceProblem("was killed by signal \(signal)\(said)")) }
        guard ended.exitCode == 0 else { return .failure(SourceProblem("exited \(ended.exitCode ?? -1)\(said)")) }
        return .success(stdout)
    }
}
