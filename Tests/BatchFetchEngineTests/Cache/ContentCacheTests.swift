@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// The content cache end to end against TestOrigin: one download per content across manifests,
/// and cache bytes never trusted blindly — an entry rewritten in place, truncated, or a symlink
/// or directory planted where an entry goes is never published; a cache that cannot be used or
/// written never fails a run.
@Suite struct ContentCacheTests {
    /// Runs `yaml` with the cache at `cache` (under the harness's directory) and returns the
    /// report with the warnings the run emitted.
    static func run(_ world: Harness, _ yaml: String, cache: String = "cache") async throws -> (report: RunReport, warnings: [String]) {
        var options = RunOptions()
        options.cache = world.path(cache)
        let handle = try world.start(yaml, options: options)
        var warnings: [String] = []
        for await event in handle.events {
            if case .warning(let text) = event { warnings.append(text) }
        }
        return (await handle.report, warnings)
    }

    /// A manifest of one job pinned by sha256, published to `dir/name`.
    static func manifest(_ path: String, sha256: String, dir: String, name: String = "f.bin") -> String {
        """
        version: 1
        output_dir: \(dir)
        defaults: {retries: 1, backoff: 50ms, timeout: 60s}
        jobs:
          - id: f
            url: {origin}\(path)
            dest: \(name)
            checksum: sha256:\(sha256)
        """
    }

    static func entry(_ world: Harness, _ sha256: String) -> String {
        world.path("cache/sha256/\(sha256.prefix(2))/\(sha256)")
    }

    @Test func aSecondManifestOfTheSameContentMakesNoRequest() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 300_000, seed: 3601)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/a.bin", OriginFile(content: content))
        let first = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "one"))
        #expect(first.report.jobs[0].source == .network)
        #expect(FileManager.default.fileExists(atPath: Self.entry(world, sha256)))
        #expect(FileManager.default.fileExists(atPath: Self.entry(world, sha256) + ".verified"))

        world.origin.resetCounters()
        let second = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "two", name: "copy.bin"))
        let requests = world.origin.requests("/a.bin").count
        let published = try world.sha256(ofFile: "two/copy.bin")
        await world.close()
        #expect(requests == 0)
        #expect(second.report.jobs[0].status == .downloaded && second.report.jobs[0].source == .cache)
        #expect(second.report.summary.fromCache == 1 && first.report.summary.fromCache == nil)
        #expect(published == sha256)
        #expect(second.warnings.isEmpty)
    }

    /// A job pinned only by md5 finds the content through what the cache verified (its md5
    /// index); an index that names other content is caught by the job's own md5, never
    /// published.
    @Test func aJobPinnedByAnotherAlgorithmIsServedThroughTheCachesIndex() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 90_000, seed: 3605)
        let other = OriginContent.generated(size: 90_000, seed: 3606)
        world.origin.serve("/a.bin", OriginFile(content: content))
        world.origin.serve("/b.bin", OriginFile(content: other))
        var digester = Digester(also: [.md5])
        digester.update(Data(content.bytes(in: 0..<content.size)))
        let md5 = digester.finalize()["md5"]!
        func manifest(_ path: String, dir: String) -> String {
            "version: 1\noutput_dir: \(dir)\njobs:\n  - {id: f, url: '{origin}\(path)', dest: f.bin, checksum: 'md5:\(md5)'}\n"
        }
        let first = try await Self.run(world, manifest("/a.bin", dir: "one"))
        world.origin.resetCounters()
        let second = try await Self.run(world, manifest("/a.bin", dir: "two"))
        let requests = world.origin.requests("/a.bin").count
        // The index now names other content: the job's md5 refuses it and it downloads.
        let otherSHA = Harness.sha256(other)
        _ = try await Self.run(world, Self.manifest("/b.bin", sha256: otherSHA, dir: "fill"))
        let index = world.path("cache/md5/\(md5.prefix(2))/\(md5)")
        try Data((otherSHA + "\n").utf8).write(to: URL(fileURLWithPath: index))
        let misled = try await Self.run(world, manifest("/a.bin", dir: "three"))
        let published = try Digester.digests(ofFile: world.path("three/f.bin"), also: [.md5]).digests["md5"]
        await world.close()
        #expect(first.report.jobs[0].source == .network)
        #expect(second.report.jobs[0].source == .cache && requests == 0)
        #expect(misled.report.jobs[0].source == .network && published == md5)
    }

    /// `cache_link: hardlink`: the published file is the entry (one inode, two links), a later
    /// use still trusts the entry without hashing it (its record renewed after the link changed
    /// its ctime), and a published file written in place corrupts the entry, which its next use
    /// evicts instead of publishing.
    @Test func withHardLinksThePublishedFileIsTheEntryAndAWriteThroughItIsCaught() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 70_000, seed: 3607)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/a.bin", OriginFile(content: content))
        func manifest(_ dir: String) -> String {
            Self.manifest("/a.bin", sha256: sha256, dir: dir).replacingOccurrences(of: "version: 1\n", with: "version: 1\ncache_link: hardlink\n")
        }
        _ = try await Self.run(world, manifest("one"))
        world.origin.resetCounters()
        let linked = try await Self.run(world, manifest("two"))
        var entryStatus = stat(), destStatus = stat()
        stat(Self.entry(world, sha256), &entryStatus)
        stat(world.path("two/f.bin"), &destStatus)
        let recordAfterLink = try String(contentsOfFile: Self.entry(world, sha256) + ".verified", encoding: .utf8)
        let again = try await Self.run(world, manifest("three"))
        let requests = world.origin.requests("/a.bin").count
        // Written through the published file: the entry is the same file.
        chmod(world.path("two/f.bin"), 0o644)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: world.path("two/f.bin")))
        try handle.seek(toOffset: 10)
        try handle.write(contentsOf: Data([0x00, 0xFF]))
        try handle.close()
        let afterWrite = try await Self.run(world, manifest("four"))
        let published = try world.sha256(ofFile: "four/f.bin")
        await world.close()
        #expect(linked.report.jobs[0].source == .cache && again.report.jobs[0].source == .cache && requests == 0)
        #expect(entryStatus.st_ino == destStatus.st_ino && destStatus.st_nlink >= 2)
        let ctime = Int64(entryStatus.st_ctim.tv_sec) * 1_000_000_000 + Int64(entryStatus.st_ctim.tv_nsec)
        #expect(recordAfterLink.split(separator: " ").dropFirst(4).first.map(String.init) == "\(ctime)",
                "the record holds the ctime the link left: \(recordAfterLink)")
        #expect(afterWrite.report.jobs[0].source == .network && afterWrite.warnings.contains { $0.contains("was corrupt") })
        #expect(published == sha256)
    }

    enum Damage: String, CaseIterable {
        /// One byte rewritten, size and mtime put back (only the ctime tells).
        case rewrittenInPlace
        case truncated
    }

    @Test(arguments: Damage.allCases)
    func aDamagedEntryIsEvictedAndNeverPublished(_ damage: Damage) async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 200_000, seed: 3602)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/a.bin", OriginFile(content: content))
        _ = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "one"))
        let entry = Self.entry(world, sha256)
        chmod(entry, 0o644)
        var before = stat()
        stat(entry, &before)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: entry))
        switch damage {
        case .rewrittenInPlace:
            try handle.seek(toOffset: 1000)
            try handle.write(contentsOf: Data([0xFF, 0x00, 0xFF]))
        case .truncated:
            try handle.truncate(atOffset: 100_000)
        }
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, entry, &times, 0) == 0)

        world.origin.resetCounters()
        let second = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "two"))
        let requests = world.origin.requests("/a.bin").count
        let published = try world.sha256(ofFile: "two/f.bin")
        let refilled = try Digester.digests(ofFile: entry).digests["sha256"]
        await world.close()
        #expect(second.report.jobs[0].source == .network && requests >= 1)
        #expect(published == sha256)
        #expect(second.warnings.contains { $0.contains("was corrupt") && $0.contains("evicted") })
        #expect(refilled == sha256, "the download filled the entry again")
    }

    /// A symlink where an entry goes is not followed (its target is not published), and the
    /// download's entry replaces the link itself; a directory there is left alone, with one
    /// warning, and the run succeeds.
    @Test func aSymlinkOrDirectoryPlantedAtAnEntryIsNeverUsed() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 50_000, seed: 3603)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/a.bin", OriginFile(content: content))
        let entry = Self.entry(world, sha256)
        try FileManager.default.createDirectory(atPath: (entry as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data("planted".utf8).write(to: URL(fileURLWithPath: world.path("outside")))
        try FileManager.default.createSymbolicLink(atPath: entry, withDestinationPath: world.path("outside"))
        let linked = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "one"))
        var status = stat()
        lstat(entry, &status)
        #expect(linked.report.jobs[0].source == .network)
        #expect(status.st_mode & S_IFMT == S_IFREG, "the entry replaced the link")
        #expect(try String(contentsOfFile: world.path("outside"), encoding: .utf8) == "planted")

        try FileManager.default.removeItem(atPath: entry)
        try FileManager.default.createDirectory(atPath: entry, withIntermediateDirectories: false)
        let directory = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "two"))
        let published = try world.sha256(ofFile: "two/f.bin")
        await world.close()
        #expect(directory.report.jobs[0].source == .network && published == sha256)
        #expect(directory.warnings.count == 1 && directory.warnings[0].contains("cannot be written"))
    }

    /// A cache that cannot be made warns once and every job downloads; one that cannot be
    /// written warns once however many jobs finish.
    @Test func aCacheThatCannotBeUsedWarnsOnceAndTheRunDownloads() async throws {
        let world = try await Harness()
        var jobs = ""
        for index in 0..<3 {
            let content = OriginContent.generated(size: 10_000, seed: 3610 + UInt64(index))
            world.origin.serve("/\(index).bin", OriginFile(content: content))
            jobs += "  - {id: j\(index), url: '{origin}/\(index).bin', dest: j\(index).bin, checksum: 'sha256:\(Harness.sha256(content))'}\n"
        }
        let yaml = "version: 1\noutput_dir: out\njobs:\n" + jobs
        try Data("a file".utf8).write(to: URL(fileURLWithPath: world.path("file")))
        let unusable = try await Self.run(world, yaml, cache: "file/cache")
        try FileManager.default.createDirectory(atPath: world.path("cache"), withIntermediateDirectories: true)
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: world.path("cache/sha256")))
        try FileManager.default.removeItem(atPath: world.path("out"))
        let unwritable = try await Self.run(world, yaml)
        await world.close()
        #expect(unusable.report.summary.downloaded == 3 && unwritable.report.summary.downloaded == 3)
        #expect(unusable.warnings.count == 1 && unusable.warnings[0].contains("cannot be used"))
        #expect(unwritable.warnings.count == 1 && unwritable.warnings[0].contains("cannot be written"))
    }

    /// Four runs filling the same entry at once: each renames a whole copy into place, and the
    /// entry is the content, with no temporary left behind.
    @Test func fourRunsFillingOneEntryAtOnceNeverCorruptIt() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 2_000_000, seed: 3604)
        let sha256 = Harness.sha256(content)
        world.origin.serve("/a.bin", OriginFile(content: content))
        let reports = try await withThrowingTaskGroup(of: RunReport.self) { group in
            for index in 0..<4 {
                group.addTask { try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "out\(index)")).report }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let entry = try Digester.digests(ofFile: Self.entry(world, sha256)).digests["sha256"]
        let names = try FileManager.default.contentsOfDirectory(atPath: world.path("cache/sha256/\(sha256.prefix(2))"))
        await world.close()
        #expect(reports.allSatisfy { $0.jobs[0].status == .downloaded })
        #expect(entry == sha256)
        #expect(Set(names) == [sha256, sha256 + ".verified"])
    }

    /// What a run uploads enters the cache (copied from the file it hashed and sent), and so
    /// does a source the target already holds: a later job pinned to that content is published
    /// from the cache without a request.
    @Test func anUploadsSourceEntersTheCache() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 200_000, seed: 3610)
        let sha256 = Harness.sha256(content)
        try Data(content.bytes(in: 0..<content.size)).write(to: URL(fileURLWithPath: world.path("local.bin")))
        world.origin.receive("/store/local.bin")
        world.origin.serve("/a.bin", OriginFile(content: content))
        let pushed = try await Self.run(world, """
            version: 1
            defaults: {retries: 1, backoff: 50ms, timeout: 60s}
            jobs:
              - {id: push, upload: local.bin, url: "{origin}/store/local.bin"}
            """)
        let entered = FileManager.default.fileExists(atPath: Self.entry(world, sha256))
        let fetched = try await Self.run(world, Self.manifest("/a.bin", sha256: sha256, dir: "two"))
        let requests = world.origin.requests("/a.bin").count
        await world.close()
        #expect(pushed.report.jobs[0].status == .uploaded, "\(String(describing: pushed.report.jobs[0].error))")
        #expect(entered)
        #expect(fetched.report.jobs[0].source == .cache && requests == 0)
    }
}
