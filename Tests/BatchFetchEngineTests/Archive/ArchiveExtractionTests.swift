@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// `extract:` end to end against TestOrigin, on the transport under test: trees compared entry
/// by entry with what GNU tar, bsdtar and unzip make of the same archive; every hostile entry
/// of Docs/Archives.md refused with `unsafe_archive` and nothing published at `into`; bombs
/// stopped at their cap; reruns that keep, repair or replace the tree. The archives are built
/// by `Tests/Fixtures/archives/make-archive.py` (Python's tarfile and zipfile write any header).
@Suite struct ArchiveExtractionTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fixtures/archives/make-archive.py").standardized.path

    /// The bytes of the archive `name` of the script.
    static func archive(_ name: String) async throws -> [UInt8] {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("bf-archive-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let status = try await Self.run("/usr/bin/env", ["python3", script, name, out])
        try #require(status == 0, "make-archive.py \(name) failed")
        return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    /// Entries of the "stream" archive's `s/` already in a temporary sibling of `t`: what an
    /// unpacking that runs while the archive arrives has written so far.
    static func unpackedSoFar(_ world: Harness) -> Int {
        let siblings = ((try? FileManager.default.contentsOfDirectory(atPath: world.directory.path)) ?? []).filter { $0.hasPrefix(".t.") }
        return siblings.map { ((try? FileManager.default.contentsOfDirectory(atPath: world.path("\($0)/s"))) ?? []).count }.max() ?? 0
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String], in directory: String? = nil) async throws -> Int32 {
        try await ToolRun.run(URL(fileURLWithPath: tool), arguments, in: directory.map { URL(fileURLWithPath: $0) }).status
    }

    /// One line per entry beneath `directory`: path, type and mode, size, mtime, link target,
    /// separated by tabs — what `find -printf` shows, so that two trees compare as `diff -r`
    /// and `stat` would.
    static func listing(_ directory: String) async throws -> [String] {
        let find = try await ToolRun.run(URL(fileURLWithPath: "/usr/bin/find"), [".", "-mindepth", "1", "-printf", "%p\\t%M\\t%s\\t%T@\\t%l\\n"],
                                         in: URL(fileURLWithPath: directory))
        return find.output.split(separator: "\n").map(String.init).sorted()
    }

    static func manifest(_ path: String, dest: String, extract: String, extra: String = "") -> String {
        """
        version: 1
        defaults: {retries: 0, timeout: 60s}
        jobs:
          - id: a
            url: {origin}\(path)
            dest: \(dest)
            extract: \(extract)
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    /// The tree equals GNU tar's and bsdtar's of the same tar.gz, and unzip's of the zip: every
    /// name (unicode ones too), type, mode (setuid dropped, under the umask), size, mtime, link
    /// target and byte. GNU tar gives a directory holding a symlink the time it made the link
    /// (it makes links last), so directories' mtimes are compared with bsdtar's only.
    @Test(arguments: ["reference-tar", "reference-tar-zst", "reference-zip"])
    func theTreeIsWhatTheReferenceToolsMake(_ name: String) async throws {
        let world = try await Harness()
        let bytes = try await Self.archive(name)
        let file = name == "reference-zip" ? "ref.zip" : name == "reference-tar-zst" ? "ref.tar.zst" : "ref.tar.gz"
        world.origin.serve("/" + file, OriginFile(content: .bytes(bytes)))
        let report = try await world.run(Self.manifest("/" + file, dest: file, extract: "true"))
        let ours = try await Self.listing(world.path("ref"))
        var references: [(String, [String])] = []
        for tool in name == "reference-zip" ? ["unzip", "bsdtar"] : ["tar", "bsdtar"] {
            let directory = world.path(tool)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let arguments: [String]
            switch tool {
            case "unzip": arguments = ["unzip", "-q", world.path(file), "-d", directory]
            case "tar": arguments = ["tar", "--no-same-owner", "--no-same-permissions", "-xf", world.path(file), "-C", directory]
            default: arguments = ["bsdtar", "--no-same-owner", "--no-same-permissions", "-xf", world.path(file), "-C", directory]
            }
            #expect(try await Self.run("/usr/bin/env", arguments) == 0, "\(tool)")
            references.append((tool, try await Self.listing(directory)))
            #expect(try await Self.run("/usr/bin/diff", ["-r", "--no-dereference", world.path("ref"), directory]) == 0, "\(tool)")
        }
        await world.close()

        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        let extracted = try #require(report.jobs[0].extracted)
        #expect(extracted.into == "ref" && extracted.format == (name == "reference-zip" ? "zip" : name == "reference-tar-zst" ? "tar.zst" : "tar.gz"))
        #expect(extracted.files == ours.filter { $0.split(separator: "\t")[1].hasPrefix("-") }.count)
        #expect(ours.contains { $0.hasPrefix("./data/ünïcødé – 名前.txt\t-rw-r--r--\t12\t") }, "\(ours)")
        for (tool, listing) in references {
            let comparable = { (lines: [String]) in
                tool == "tar" ? lines.map { line in
                    let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                    return fields[1].hasPrefix("d") ? fields.prefix(3).joined(separator: "\t") : line
                } : lines
            }
            #expect(comparable(ours) == comparable(listing), "\(tool)")
        }
    }

    /// Every hostile entry fails the job with `unsafe_archive` naming the entry: nothing is at
    /// `into`, no temporary sibling is left, nothing was written outside, and the verified
    /// archive itself stays.
    @Test(arguments: [
        ("traversal", "'../evil.txt' climbs out"), ("absolute", "is an absolute path"), ("backslash-zip", "'../evil.txt' climbs out"),
        ("symlink-escape", "leads out of the tree"), ("symlink-absolute", "absolute path ('/etc')"),
        ("symlink-then-through", "'l/evil.txt' goes through 'l'"), ("symlink-dot-climb", "goes back up after a name"),
        ("hardlink-escape", "hard link to '../outside.txt'"), ("hardlink-outside", "hard link to '/etc/passwd'"),
        ("device", "is a device node"), ("fifo", "is a FIFO"), ("duplicate-types", "appears twice, as a directory and as a file"),
    ])
    func hostileEntriesFailTheJobAndPublishNothing(_ name: String, _ expected: String) async throws {
        let world = try await Harness()
        let file = name.contains("zip") ? "h.zip" : "h.tar.gz"
        await world.origin.serve("/" + file, OriginFile(content: .bytes(try Self.archive(name))))
        let report = try await world.run(Self.manifest("/" + file, dest: "in/" + file, extract: "{into: tree/h}"))
        let names = (try? FileManager.default.contentsOfDirectory(atPath: world.path("tree"))) ?? []
        let outside = ["evil.txt", "outside.txt"].filter { world.exists($0) || world.exists("tree/\($0)") }
        let archiveKept = world.exists("in/" + file)
        await world.close()

        let job = report.jobs[0]
        #expect(job.status == .failed && job.error?.code == .unsafeArchive, "\(String(describing: job.error))")
        #expect(job.error?.message.contains(expected) == true, "\(job.error?.message ?? "")")
        #expect(names.isEmpty, "\(names)")
        #expect(outside.isEmpty)
        #expect(archiveKept)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/batchfetch-evil.txt"))
    }

    /// A zip name's backslashes are path separators, as libarchive (and bsdtar, and Windows)
    /// read them — unzip on Unix keeps them in the name — and the path they make is held to
    /// every rule: `sub\\évil.txt` is `sub/évil.txt` in the tree (`..\\evil.txt`, a climb, is
    /// refused above).
    @Test func aZipNamesBackslashesAreSeparators() async throws {
        let world = try await Harness()
        await world.origin.serve("/b.zip", OriginFile(content: .bytes(try Self.archive("backslash-zip-utf8"))))
        let report = try await world.run(Self.manifest("/b.zip", dest: "b.zip", extract: "true"))
        let listing = try await Self.listing(world.path("b"))
        await world.close()
        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(listing.map { $0.split(separator: "\t")[0] } == ["./ok.txt", "./sub", "./sub/évil.txt"])
    }

    /// A bomb stops at `max_size` (20 MiB of zeros, cap 1 MiB) and at `max_entries`; truncated,
    /// corrupt and non-archives are `archive_invalid`; a format named in the manifest must be
    /// the one found. Nothing is published at `into`.
    @Test(arguments: [
        ("bomb", "{into: t, max_size: 1MiB}", ErrorCode.archiveTooLarge, "max_size"),
        ("many-entries", "{into: t, max_entries: 1000}", .archiveTooLarge, "more than 1000 entries"),
        ("truncated", "{into: t}", .archiveInvalid, "x.tar.gz"),
        ("corrupt", "{into: t}", .archiveInvalid, "x.tar.gz"),
        ("not-an-archive", "{into: t}", .archiveInvalid, "x.tar.gz"),
        ("reference-zip", "{into: t, format: tar.gz}", .archiveInvalid, "is zip, not the tar.gz"),
    ])
    func bombsAndBrokenArchivesFailWithoutATree(_ name: String, _ extract: String, _ code: ErrorCode, _ expected: String) async throws {
        let world = try await Harness()
        await world.origin.serve("/x.tar.gz", OriginFile(content: .bytes(try Self.archive(name))))
        let report = try await world.run(Self.manifest("/x.tar.gz", dest: "x.tar.gz", extract: extract))
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        await world.close()
        let job = report.jobs[0]
        #expect(job.status == .failed && job.error?.code == code, "\(String(describing: job.error))")
        #expect(job.error?.message.contains(expected) == true, "\(job.error?.message ?? "")")
        #expect(!names.contains { $0 == "t" || $0.hasPrefix(".t.") }, "\(names)")
    }

    /// An archive that fails its checksum is never unpacked: the job fails `checksum_mismatch`
    /// and `into` does not appear.
    @Test func anArchiveThatFailsItsChecksumIsNeverUnpacked() async throws {
        let world = try await Harness()
        await world.origin.serve("/r.tar.gz", OriginFile(content: .bytes(try Self.archive("reference-tar"))))
        let report = try await world.run(Self.manifest("/r.tar.gz", dest: "r.tar.gz", extract: "true",
                                                       extra: "checksum: sha256:\(String(repeating: "0", count: 64))"))
        let tree = world.exists("r")
        await world.close()
        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.code == .checksumMismatch)
        #expect(!tree)
    }

    /// A rerun with the archive and the tree unchanged is `up_to_date` without reading the
    /// archive (it is made unreadable to prove it); a tree someone edited and partly deleted is
    /// restored and counted as `repaired`; a new archive at the origin (`refresh: always`)
    /// replaces the tree whole; `strip_components` and `include` shape it.
    @Test func rerunsKeepRepairOrReplaceTheTree() async throws {
        let world = try await Harness()
        await world.origin.serve("/r.tar.gz", OriginFile(content: .bytes(try Self.archive("reference-tar"))))
        let manifest = Self.manifest("/r.tar.gz", dest: "r.tar.gz", extract: "{into: t, strip_components: 1, include: ['**/*.txt', '*.sh']}")
        let first = try await world.run(manifest)
        let firstListing = try await Self.listing(world.path("t"))
        world.origin.resetCounters()
        let second = try await world.run(manifest)

        try Data("edited".utf8).write(to: URL(fileURLWithPath: world.path("t/a.txt")))
        try FileManager.default.removeItem(atPath: world.path("t/exec.sh"))
        let third = try await world.run(manifest)
        let repairedListing = try await Self.listing(world.path("t"))
        let restored = try String(contentsOfFile: world.path("t/a.txt"), encoding: .utf8)

        await world.origin.serve("/r.tar.gz", OriginFile(content: .bytes(try Self.archive("single-gz"))))
        let fourth = try await world.run(manifest.replacingOccurrences(of: "timeout: 60s", with: "timeout: 60s, refresh: always")
            .replacingOccurrences(of: "{into: t, strip_components: 1, include: ['**/*.txt', '*.sh']}", with: "{into: t}"))
        let replaced = try? Data(contentsOf: URL(fileURLWithPath: world.path("t")))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.directory.path).filter { $0.hasPrefix(".t.") }
        await world.close()

        #expect(first.jobs[0].status == .downloaded && first.jobs[0].extracted?.files == 3, "\(String(describing: first.jobs[0]))")
        #expect(firstListing.map { $0.split(separator: "\t")[0] } == ["./a.txt", "./exec.sh", "./ünïcødé – 名前.txt"])
        #expect(second.jobs[0].status == .upToDate && second.jobs[0].extracted?.repaired == nil)
        #expect(third.jobs[0].status == .upToDate && third.jobs[0].extracted?.repaired == 2, "\(String(describing: third.jobs[0]))")
        #expect(repairedListing == firstListing)
        #expect(restored == "alpha\n")
        #expect(fourth.jobs[0].status == .downloaded && fourth.jobs[0].extracted?.format == "gz")
        #expect(replaced == Data(String(repeating: "line\n", count: 1000).utf8))
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// `verify` checks a tree offline against what the run recorded: whole is `ok` with
    /// `extracted`; a file rewritten in place with its size and mtime put back (its ctime
    /// tells) and a removed one are `drift`, named; the next run repairs the tree and `verify`
    /// is `ok` again.
    @Test func verifyChecksTheTreeAndNamesWhatDiffers() async throws {
        let world = try await Harness()
        await world.origin.serve("/r.tar.gz", OriginFile(content: .bytes(try Self.archive("reference-tar"))))
        let yaml = Self.manifest("/r.tar.gz", dest: "r.tar.gz", extract: "{into: t, strip_components: 1}")
        let manifest = try world.manifest(yaml)
        let first = try await world.run(yaml)
        let sound = await Verifier(manifest: manifest, lock: nil, options: world.options(for: manifest)).run()

        let path = world.path("t/a.txt")
        let before = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as! Date
        try Data("ALPHA\n".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.modificationDate: before], ofItemAtPath: path)
        try FileManager.default.removeItem(atPath: world.path("t/sub/b.bin"))
        let damaged = await Verifier(manifest: manifest, lock: nil, options: world.options(for: manifest)).run()
        let repair = try await world.run(yaml)
        let repaired = await Verifier(manifest: manifest, lock: nil, options: world.options(for: manifest)).run()
        await world.close()

        #expect(first.jobs[0].status == .downloaded)
        #expect(sound.jobs[0].status == .ok && sound.jobs[0].extracted?.files == 7, "\(String(describing: sound.jobs[0]))")
        #expect(damaged.jobs[0].status == .drift && damaged.jobs[0].error?.code == .checksumMismatch)
        #expect(damaged.jobs[0].error?.message.contains("a.txt changed") == true && damaged.jobs[0].error?.message.contains("sub/b.bin missing") == true,
                "\(damaged.jobs[0].error?.message ?? "")")
        // a.txt, its hard link hard-a (the same file), and sub/b.bin.
        #expect(repair.jobs[0].status == .upToDate && repair.jobs[0].extracted?.repaired == 3, "\(String(describing: repair.jobs[0].extracted))")
        #expect(repaired.jobs[0].status == .ok)
    }

    /// A tar.gz arriving as one stream is unpacked while it downloads: with the origin holding
    /// the last 2 MiB back, files of the tree are already in its temporary sibling; once the
    /// archive verified the tree is swapped in and says `streamed`. A zip is unpacked after
    /// verification (it is read from its end). Both transports.
    @Test func aTarIsUnpackedWhileItDownloads() async throws {
        let world = try await Harness()
        let bytes = try await Self.archive("stream")
        var file = OriginFile(content: .bytes(bytes))
        file.pauseAfterServed = Int64(bytes.count - (2 << 20))
        file.paused = true
        world.origin.serve("/s.tar.gz", file)
        let run = try world.start(Self.manifest("/s.tar.gz", dest: "s.tar.gz", extract: "{into: t}", extra: "segments: 1"))
        let unpackedEarly = await eventually { Self.unpackedSoFar(world) >= 8 }
        let treeBeforeTheEnd = world.exists("t")
        world.origin.update("/s.tar.gz") { $0.paused = false }
        let report = await run.report
        let files = (try? FileManager.default.contentsOfDirectory(atPath: world.path("t/s")))?.count
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.directory.path).filter { $0.hasPrefix(".t.") }

        await world.origin.serve("/z.zip", OriginFile(content: .bytes(try Self.archive("reference-zip"))))
        let zip = try await world.run(Self.manifest("/z.zip", dest: "z.zip", extract: "true"))
        await world.close()

        #expect(unpackedEarly, "no entry was unpacked before the archive's last bytes came")
        #expect(!treeBeforeTheEnd)
        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(report.jobs[0].extracted?.streamed == true && report.jobs[0].extracted?.files == 128)
        #expect(files == 128 && leftovers.isEmpty)
        #expect(zip.jobs[0].status == .downloaded && zip.jobs[0].extracted?.streamed == nil && zip.jobs[0].extracted?.files == 4)
    }

    /// A segmented tar.gz is unpacked while it downloads too, following the prefix its ranges
    /// have written: with the origin holding every byte past 6 MiB of 8, the files of the first
    /// three 2 MiB ranges (more than the first range alone holds) are in the temporary sibling
    /// before the last range comes; the tree is swapped in once the whole archive verified.
    /// Both transports.
    @Test func aSegmentedTarIsUnpackedAsItsPrefixGrows() async throws {
        let world = try await Harness()
        let bytes = try await Self.archive("stream")
        var file = OriginFile(content: .bytes(bytes))
        file.pauseFrom = 6 << 20
        file.paused = true
        world.origin.serve("/s.tar.gz", file)
        // The size sizes the ranges on a transport with backpressure (else 16 MiB, one range).
        let run = try world.start(Self.manifest("/s.tar.gz", dest: "s.tar.gz", extract: "{into: t}",
                                                extra: "segments: 4\nsize: \(bytes.count)"))
        // 64 KiB files: the first 2 MiB range holds at most 32 of them.
        let unpackedEarly = await eventually { Self.unpackedSoFar(world) >= 64 }
        let treeBeforeTheEnd = world.exists("t")
        world.origin.update("/s.tar.gz") { $0.paused = false }
        let report = await run.report
        try FileManager.default.createDirectory(atPath: world.path("gnu"), withIntermediateDirectories: true)
        let gnuTar = try await Self.run("/usr/bin/env", ["tar", "-xf", world.path("s.tar.gz"), "-C", world.path("gnu")])
        let differs = try await Self.run("/usr/bin/diff", ["-r", world.path("t"), world.path("gnu")])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.directory.path).filter { $0.hasPrefix(".t.") }
        await world.close()

        #expect(unpackedEarly, "the segments' prefix was not unpacked before the archive's last range came")
        #expect(!treeBeforeTheEnd)
        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(report.jobs[0].segments == 4)
        #expect(report.jobs[0].extracted?.streamed == true && report.jobs[0].extracted?.files == 128)
        #expect(gnuTar == 0 && differs == 0, "the tree is not what GNU tar makes of the archive")
        #expect(leftovers.isEmpty)
    }

    /// A segmented part resumed by a later run whose archive changed meanwhile: the reader may
    /// have unpacked the old prefix before the first range's `If-Range` was refused, so the
    /// download starts again from byte 0 and the tree is the new archive's, every byte (never
    /// old entries with new ones). Both transports.
    @Test func aStaleSegmentedPrefixNeverReachesTheTree() async throws {
        let world = try await Harness()
        var file = await OriginFile(content: .bytes(try Self.archive("stream")))
        file.pauseFrom = 6 << 20
        file.paused = true
        world.origin.serve("/s.tar.gz", file)
        var options = RunOptions()
        options.segmentRangeSize = 2 << 20  // the same ranges whichever the transport
        let yaml = Self.manifest("/s.tar.gz", dest: "s.tar.gz", extract: "{into: t}", extra: "segments: 4")
        let first = try world.start(yaml, options: options)
        let prefixUnpacked = await eventually { Self.unpackedSoFar(world) >= 64 }
        first.interrupt()
        let interrupted = await first.report
        let newer = try await Self.archive("stream")
        world.origin.replace("/s.tar.gz", with: .bytes(newer))
        world.origin.update("/s.tar.gz") { $0.paused = false }
        let second = try await world.run(yaml, options: options)
        let published = try? Data(contentsOf: URL(fileURLWithPath: world.path("s.tar.gz")))
        try FileManager.default.createDirectory(atPath: world.path("gnu"), withIntermediateDirectories: true)
        let gnuTar = try await Self.run("/usr/bin/env", ["tar", "-xf", world.path("s.tar.gz"), "-C", world.path("gnu")])
        let differs = try await Self.run("/usr/bin/diff", ["-r", world.path("t"), world.path("gnu")])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: world.directory.path).filter { $0.hasPrefix(".t.") }
        await world.close()

        #expect(prefixUnpacked)
        #expect(interrupted.jobs[0].status == .interrupted, "\(String(describing: interrupted.jobs[0]))")
        #expect(second.jobs[0].status == .downloaded, "\(String(describing: second.jobs[0].error))")
        #expect(published == Data(newer))
        #expect(second.jobs[0].extracted?.files == 128)
        #expect(gnuTar == 0 && differs == 0, "the tree is not what GNU tar makes of the new archive")
        #expect(leftovers.isEmpty)
    }

    /// A stream unpacked while it came and then failing its checksum publishes nothing: the
    /// sibling is removed and `into` never appears. A download that starts again from 0 (a
    /// server that drops the connection and ignores ranges) cannot use what was unpacked from
    /// the first bytes (``ArchiveStreamTests``): the tree comes out whole.
    @Test func aStreamThatFailsOrStartsAgainPublishesOnlyAVerifiedTree() async throws {
        let world = try await Harness()
        let bytes = try await Self.archive("stream")
        world.origin.serve("/bad.tar.gz", OriginFile(content: .bytes(bytes)))
        let bad = try await world.run(Self.manifest("/bad.tar.gz", dest: "bad.tar.gz", extract: "{into: bad}",
                                                    extra: "segments: 1\nchecksum: sha256:\(String(repeating: "0", count: 64))"))
        var again = OriginFile(content: .bytes(bytes))
        again.faults = [.drop(afterBytes: 5 << 20)]
        again.rangesHonoured = 0
        world.origin.serve("/again.tar.gz", again)
        let restarted = try await world.run(Self.manifest("/again.tar.gz", dest: "again.tar.gz", extract: "{into: again}",
                                                          extra: "segments: 1\nretries: 2\nbackoff: 10ms"))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: world.path("again/s")))?.count
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        await world.close()

        #expect(bad.jobs[0].status == .failed && bad.jobs[0].error?.code == .checksumMismatch)
        #expect(!names.contains("bad") && !names.contains { $0.hasPrefix(".bad.") }, "\(names)")
        #expect(restarted.jobs[0].status == .downloaded, "\(String(describing: restarted.jobs[0].error))")
        // Unpacked after verification on nio, whose first body reached the part; streamed on
        // URLSession when its first body never did (then the second stream is the whole one).
        #expect(restarted.jobs[0].extracted?.files == 128)
        #expect(files == 128 && !names.contains { $0.hasPrefix(".again.") })
    }

    /// `keep_archive: false` removes the archive once the tree is in place, and a rerun is
    /// `up_to_date` without a request while the tree is whole; a damaged tree fetches again.
    @Test func withoutTheArchiveARerunNeedsNoRequest() async throws {
        let world = try await Harness()
        await world.origin.serve("/r.tar.gz", OriginFile(content: .bytes(try Self.archive("reference-tar"))))
        let manifest = Self.manifest("/r.tar.gz", dest: "r.tar.gz", extract: "{into: t, keep_archive: false}")
        let first = try await world.run(manifest)
        let archiveAfterFirst = world.exists("r.tar.gz")
        world.origin.resetCounters()
        let second = try await world.run(manifest)
        let requestsOfSecond = world.origin.requests("/r.tar.gz").count
        try FileManager.default.removeItem(atPath: world.path("t/data/sub/b.bin"))
        let third = try await world.run(manifest)
        let requestsOfThird = world.origin.requests("/r.tar.gz").count
        let restored = world.exists("t/data/sub/b.bin")
        await world.close()

        #expect(first.jobs[0].status == .downloaded && !archiveAfterFirst)
        #expect(second.jobs[0].status == .upToDate && requestsOfSecond == 0 && second.jobs[0].extracted?.files == 7)
        #expect(third.jobs[0].status == .downloaded && requestsOfThird == 1 && restored)
    }
}
