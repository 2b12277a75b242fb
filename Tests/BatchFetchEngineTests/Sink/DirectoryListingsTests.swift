@testable import BatchFetchEngine
import Foundation
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
}
