@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import TestOrigin
import Testing

/// The run's listings of destination directories: which names a job may skip looking up.
@Suite struct DirectoryListingsTests {
    static func directory(_ names: [String]) throws -> (URL, SafeDirectory) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-listing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url.appendingPathComponent("d"), withIntermediateDirectories: true)
        for name in names { try Data("x".utf8).write(to: url.appendingPathComponent("d/\(name)")) }
        let root = try SafeDirectory.root(url.path, create: false)
        return (url, try #require(try root.subdirectory("d", create: false)))
    }

    @Test func namesFoundAtTheFirstLookAreKeptAndOthersNeedNoLookup() throws {
        let (url, directory) = try Self.directory(["a.bin", "b.bin.part", "ünïcode name.bin"])
        defer { try? FileManager.default.removeItem(at: url) }
        let listings = DirectoryListings(limit: 100)
        #expect(listings.mayContain("a.bin", in: "d", directory: directory))
        #expect(listings.mayContain("b.bin.part", in: "d", directory: directory))
        #expect(listings.mayContain("ünïcode name.bin", in: "d", directory: directory))
        guard DirectoryListings.list(directory, limit: 100) != nil else {
            // Not Linux, or a file system that does not say whether it folds case: every name
            // is looked up.
            #expect(listings.mayContain("c.bin", in: "d", directory: directory))
            return
        }
        #expect(!listings.mayContain("c.bin", in: "d", directory: directory))
        #expect(!listings.mayContain("a.bin.part", in: "d", directory: directory))
        // The listing is the directory as the run found it: a name made later is the job's own.
        try Data("x".utf8).write(to: url.appendingPathComponent("d/c.bin"))
        #expect(!listings.mayContain("c.bin", in: "d", directory: directory))
        #expect(DirectoryListings(limit: 100).mayContain("c.bin", in: "d", directory: directory))
    }

    @Test func aDirectoryWithMoreEntriesThanTheLimitIsNotListed() throws {
        let (url, directory) = try Self.directory(["a.bin", "b.bin", "c.bin"])
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(DirectoryListings(limit: 2).mayContain("missing.bin", in: "d", directory: directory))
        if DirectoryListings.list(directory, limit: 5) != nil {
            #expect(!DirectoryListings(limit: 5).mayContain("missing.bin", in: "d", directory: directory))
        }
    }

    /// The pass removes the temporary files of batchfetch processes that are gone (a kill -9
    /// between making one and renaming it), and nothing else: not this process's, not a
    /// running process's, not a name that only looks alike.
    @Test func leftoverTemporariesOfProcessesThatAreGoneAreRemoved() throws {
        let gone = SpawnedProcess()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = gone.processIdentifier, alive = getpid(), parent = getppid()
        let stale = [".a.bin.part.json.\(dead)-992803027.tmp", ".b.bin.\(dead)-1.tmp"]
        let kept = [".c.bin.part.json.\(alive)-5.tmp", ".d.bin.\(parent)-7.tmp", ".notes.tmp", ".e.bin.\(dead)-x.tmp",
                    "f.bin.\(dead)-3.tmp", ".g.bin.\(dead)-3.tmp.bak"]
        let (url, directory) = try Self.directory(stale + kept)
        defer { try? FileManager.default.removeItem(at: url) }
        guard DirectoryListings.list(directory, limit: 100) != nil else { return }  // not listed here
        let left = try FileManager.default.contentsOfDirectory(atPath: url.appendingPathComponent("d").path)
        #expect(left.sorted() == kept.sorted())
    }
}
