@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
@testable import BatchFetchState
import Foundation
import TestOrigin
import Testing

/// Nightly reruns: the state cache spares re-hashing unchanged files, and `refresh: if-changed`
/// asks the server with a conditional GET.
@Suite struct RefreshAndStateTests {
    @Test func unchangedFilesAreNotHashedAgainButTouchedOnesAre() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 200_000, seed: 61)
        world.origin.serve("/f.bin", OriginFile(content: content))
        let manifest = world.single("/f.bin", extra: "checksum: sha256:\(Harness.sha256(content))")
        #expect(try await world.run(manifest).jobs[0].status == .downloaded)
        let state = StateCache(directory: try SafeDirectory.root(world.path(""), create: false), readOnly: true)
        #expect(state.recorded("out.bin")?.digests["sha256"] == Harness.sha256(content))

        // Overwrite a byte but keep size and mtime: the cache vouches for the file, so it is
        // not read (a write that hides itself from mtime is out of reach, as for make or rsync).
        let path = world.path("out.bin")
        var before = stat()
        stat(path, &before)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data([0xFF]))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        world.origin.resetCounters()
        let cached = try await world.run(manifest)
        #expect(cached.jobs[0].status == .upToDate)

        // A new mtime makes the entry stale: the file is hashed, found wrong, and fetched again.
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        let rehashed = try await world.run(manifest)
        let digest = try world.sha256(ofFile: "out.bin")
        await world.close()
        #expect(rehashed.jobs[0].status == .downloaded)
        #expect(digest == Harness.sha256(content))
    }

    @Test func ifChangedAsksWithTheStoredValidatorAndA304MeansUpToDate() async throws {
        let world = try await Harness()
        world.origin.serve("/f.bin", .generated(size: 100_000, seed: 62))
        let manifest = world.single("/f.bin", extra: "refresh: if-changed")
        #expect(try await world.run(manifest).jobs[0].status == .downloaded)

        world.origin.resetCounters()
        let unchanged = try await world.run(manifest)
        let conditional = world.origin.requests("/f.bin").first
        #expect(unchanged.jobs[0].status == .upToDate && unchanged.jobs[0].httpStatus == 304)
        #expect(conditional?.header("if-none-match")?.hasPrefix("\"") == true)
        #expect(world.origin.bytesServed("/f.bin") == 0)

        let new = OriginContent.generated(size: 100_000, seed: 63)
        world.origin.replace("/f.bin", with: new)
        let changed = try await world.run(manifest)
        let digest = try world.sha256(ofFile: "out.bin")
        await world.close()
        #expect(changed.jobs[0].status == .downloaded)
        #expect(digest == Harness.sha256(new))
    }

    @Test func ifChangedWithAPinnedChecksumNeedsNoNetwork() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 50_000, seed: 64)
        world.origin.serve("/f.bin", OriginFile(content: content))
        let manifest = world.single("/f.bin", extra: "refresh: if-changed\nchecksum: sha256:\(Harness.sha256(content))")
        _ = try await world.run(manifest)
        world.origin.resetCounters()
        let second = try await world.run(manifest)
        let requests = world.origin.requests("/f.bin")
        await world.close()
        #expect(second.jobs[0].status == .upToDate && requests.isEmpty)
    }
}
