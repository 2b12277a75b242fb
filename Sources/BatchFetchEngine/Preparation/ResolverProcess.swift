import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Runs an external resolver (Docs/Sources.md, "External resolvers"): the program itself, never
/// a shell (`posix_spawnp`, the words as its arguments; a relative program was made absolute
/// against the manifest's directory by validation), in batchfetch's working directory, stdin
/// `/dev/null`, in a process group of its own so that a timeout kills everything it started.
/// Written here rather than with Foundation's `Process`, which cannot start a process group.
enum ResolverProcess {
    /// What a resolver may print on stdout; more is an error (a listing of a million files is
    /// about 200 MB, far past any source a manifest names).
    static let outputLimit = 256 << 20

    /// Its stdout when it exits 0 within `timeout` seconds; else why not, with the last line of
    /// its stderr.
    static func run(_ command: [String], timeout: Double) async -> Result<Data, SourceProblem> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: runBlocking(command, timeout: timeout))
            }
        }
    }

    private static func runBlocking(_ command: [String], timeout: Double) -> Result<Data, SourceProblem> {
        var output: [Int32] = [0, 0], errors: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { return .failure(SourceProblem("could not start: pipe: \(String(cString: strerror(errno)))")) }
        guard pipe(&errors) == 0 else {
            close(output[0]); close(output[1])
            return .failure(SourceProblem("could not start: pipe: \(String(cString: strerror(errno)))"))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        for descriptor in output + errors { posix_spawn_file_actions_addclose(&actions, descriptor) }
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
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ)
        close(output[1])
        close(errors[1])
        guard spawned == 0 else {
            close(output[0]); close(errors[0])
            return .failure(SourceProblem("could not start \(command[0]): \(String(cString: strerror(spawned)))"))
        }
        // Past the deadline the whole group is killed, which closes the pipes it held.
        let fired = NIOLockedValueBox(false)
        let killer = DispatchWorkItem {
            fired.withLockedValue { $0 = true }
            kill(-pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        let stderrText = NIOLockedValueBox(Data?.none)
        let reading = DispatchGroup()
        let errorDescriptor = errors[0]
        DispatchQueue.global().async(group: reading) { stderrText.withLockedValue { $0 = readAll(errorDescriptor, limit: 1 << 20) } }
        let stdoutData = readAll(output[0], limit: outputLimit)
        reading.wait()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        killer.cancel()
        let timedOut = fired.withLockedValue { $0 }
        close(output[0])
        close(errors[0])
        let lastLine = String(decoding: stderrText.withLockedValue { $0 } ?? Data(), as: UTF8.self)
            .split(whereSeparator: \.isNewline).last.map { String($0.prefix(500)) }
        let said = lastLine.map { ": \($0)" } ?? ""
        if timedOut { return .failure(SourceProblem("did not finish within \(Int(timeout)) s (killed)\(said)")) }
        guard let stdoutData else { return .failure(SourceProblem("printed more than \(outputLimit) bytes")) }
        if isKilled(status) { return .failure(SourceProblem("was killed by signal \(status & 0x7F)\(said)")) }
        let code = (status >> 8) & 0xFF
        guard code == 0 else { return .failure(SourceProblem("exited \(code)\(said)")) }
        return .success(stdoutData)
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
