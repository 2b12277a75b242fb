@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// What a job finds on disk before it opens its part, and how a part is named.
@Suite struct PartialFilesTests {
    static func files(_ contents: [String: Int]) throws -> (URL, PartialFiles) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bf-partial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for (name, size) in contents { try Data(count: size).write(to: url.appendingPathComponent(name)) }
        return (url, PartialFiles(root: try SafeDirectory.root(url.path, create: false), dest: "f.bin"))
    }

    /// A job of unknown size stays on an event loop only when what it may hash (`dest`) or read
    /// back (`<dest>.part`) is missing or small.
    @Test func holdsAtMostLooksAtTheDestAndTheLeftoverPart() throws {
        for (contents, small) in [([:], true), (["f.bin": 4096], true), (["f.bin.part": 1000, "f.bin": 1000], true),
                                  (["f.bin": 5000], false), (["f.bin.part": 5000], false), (["other.bin": 9000], true)] {
            let (url, files) = try Self.files(contents)
            defer { try? FileManager.default.removeItem(at: url) }
            #expect(files.holdsAtMost(4096) == small, "\(contents)")
        }
    }

    /// An unnamed part is given its name when asked (a sidecar is about to be written), and
    /// never over a file another process made there meanwhile.
    @Test func anUnnamedPartIsNamedOnlyWhereTheNameIsFree() throws {
        let (url, files) = try Self.files([:])
        defer { try? FileManager.default.removeItem(at: url) }
        let descriptor = try files.openPart(unnamed: true)
        defer { close(descriptor) }
        guard files.partIsUnnamed else { return }  // no unnamed files here: nothing to name
        _ = pwrite(descriptor, "ours", 4, 0)
        #expect(files.nameUnnamedPart())
        #expect(!files.partIsUnnamed)
        #expect(try Data(contentsOf: url.appendingPathComponent("f.bin.part")) == Data("ours".utf8))

        let (otherURL, other) = try Self.files([:])
        defer { try? FileManager.default.removeItem(at: otherURL) }
        let otherDescriptor = try other.openPart(unnamed: true)
        defer { close(otherDescriptor) }
        try Data("theirs".utf8).write(to: otherURL.appendingPathComponent("f.bin.part"))
        #expect(!other.nameUnnamedPart())
        #expect(other.partIsUnnamed)
        #expect(try Data(contentsOf: otherURL.appendingPathComponent("f.bin.part")) == Data("theirs".utf8))
    }

    /// A `<dest>.part` that is a second name of `dest`'s file (a run killed between publishing
    /// a part by link and removing its name) goes with its sidecar; any other part stays.
    @Test func aPartLinkedToTheDestIsRemovedAndOthersStay() throws {
        let (url, files) = try Self.files(["f.bin": 10, "f.bin.part.json": 2])
        defer { try? FileManager.default.removeItem(at: url) }
        let dest = url.appendingPathComponent("f.bin").path, part = url.appendingPathComponent("f.bin.part").path
        #expect(link(dest, part) == 0)
        files.removePartLinkedToDest()
        #expect(!FileManager.default.fileExists(atPath: part))
        #expect(!FileManager.default.fileExists(atPath: url.appendingPathComponent("f.bin.part.json").path))
        #expect(FileManager.default.fileExists(atPath: dest))

        let (otherURL, other) = try Self.files(["f.bin": 10, "f.bin.part": 10])
        defer { try? FileManager.default.removeItem(at: otherURL) }
        other.removePartLinkedToDest()
        #expect(FileManager.default.fileExists(atPath: otherURL.appendingPathComponent("f.bin.part").path))
    }
}
