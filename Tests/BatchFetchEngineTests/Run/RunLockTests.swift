import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// The run lock with shards: the shards of one split share a directory, a shard runs once, and a
/// whole-manifest run excludes them all (and they it). `flock` belongs to an open file, so two
/// locks in one process contend as two processes would.
@Suite struct RunLockTests {
    private func directory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-lock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }

    @Test func shardsOfOneSplitRunSideBySideButEachOnlyOnce() throws {
        let path = try directory()
        let first = try RunLock(directory: path, shard: Shard(index: 0, count: 2), wait: false)
        let second = try RunLock(directory: path, shard: Shard(index: 1, count: 2), wait: false)
        #expect(first.path.hasSuffix("/.batchfetch.shard-0-of-2.lock") && second.path.hasSuffix("/.batchfetch.shard-1-of-2.lock"))
        do {
            _ = try RunLock(directory: path, shard: Shard(index: 1, count: 2), wait: false)
            Issue.record("shard 1/2 was taken twice")
        } catch let held as RunLock.Held {
            #expect(held.pid == getpid() && !held.byShards && held.path.hasSuffix(".batchfetch.shard-1-of-2.lock"))
        }
        first.release()
        second.release()
        #expect(throws: Never.self) { try RunLock(directory: path, shard: Shard(index: 1, count: 2), wait: false) }
    }

    @Test func aWholeRunAndShardRunsExcludeEachOther() throws {
        let path = try directory()
        let shard = try RunLock(directory: path, shard: Shard(index: 0, count: 2), wait: false)
        do {
            _ = try RunLock(directory: path, wait: false)
            Issue.record("a whole run started beside a shard")
        } catch let held as RunLock.Held {
            #expect(held.byShards && held.pid == nil)
        }
        shard.release()
        let whole = try RunLock(directory: path, wait: false)
        do {
            _ = try RunLock(directory: path, shard: Shard(index: 1, count: 2), wait: false)
            Issue.record("a shard started beside a whole run")
        } catch let held as RunLock.Held {
            #expect(!held.byShards && held.pid == getpid() && held.path.hasSuffix("/.batchfetch.lock"))
        }
        whole.release()
    }

    @Test func aShardWaitsForTheWholeRunToFinish() async throws {
        let path = try directory()
        let whole = try RunLock(directory: path, wait: false)
        let saw = HeldBox()
        // The waiting lock blocks its thread in flock until the test gives the lock up: on a
        // thread of its own, not the cooperative pool, which has one thread per core (two here)
        // and which this test's own task needs to give the lock up. In the pool, it once
        // deadlocked a whole test run with another test that blocked the other thread.
        let waiting: Task<Void, any Error> = Task {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread.detachNewThread {
                    do {
                        let lock = try RunLock(directory: path, shard: Shard(index: 0, count: 3), wait: true) { saw.set($0) }
                        lock.release()
                        continuation.resume()
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
        // Give the lock up only once the waiter has found it held.
        _ = await eventually { saw.get() != nil }
        #expect(saw.get()?.pid == getpid(), "the shard never found the whole run's lock held")
        whole.release()
        try await waiting.value
    }
}

/// The holder a waiting lock reported, across threads.
private final class HeldBox: @unchecked Sendable {
    private let lock = NSLock()
    private var held: RunLock.Held?

    func set(_ value: RunLock.Held) { lock.withLock { held = value } }
    func get() -> RunLock.Held? { lock.withLock { held } }
}
