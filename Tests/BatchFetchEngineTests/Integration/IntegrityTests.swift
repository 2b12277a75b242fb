@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import TestOrigin
import Testing

/// Never wrong bytes, never a write outside output_dir: misbehaving servers (no Range, gzip the
/// client did not ask for) and hostile file systems (planted symlinks, a directory swapped for a
/// symlink mid-run, a second writer), on both transports.
@Suite struct IntegrityTests {
    static let size: Int64 = 40 << 20

    // MARK: - Servers

    /// `python3 -m http.server` has no Range support: the whole body arrives to the first
    /// (bounded) range request. It must be taken as it comes, once: URLSession, which cannot
    /// pause it, never asks an origin for a range before the origin has honoured one
    /// (`RangeSupport`): such requests go to the transport with backpressure. Before, URLSession
    /// asked and handed the body over at its head, and the cancelled transfer kept reading while
    /// small jobs beside it kept the delivery queue busy: 50–300 MB queued, 115–380 MiB of RSS
    /// (issue 33). So exactly one body is served, with five small jobs beside the large one.
    @Test(arguments: [false, true])
    func aServerWithoutRangesCostsOneBody(advertises: Bool) async throws {
        let world = try await Harness()
        var file = OriginFile.generated(size: Self.size, seed: 31)
        if advertises { file.ignoresRange = true } else { file.acceptsRanges = false }
        world.origin.serve("/big.bin", file)
        var jobs = "  - {id: big, url: \"{origin}/big.bin\", dest: out.bin}\n"
        for index in 1...5 {
            var small = OriginFile.generated(size: Int64(index) << 20, seed: UInt64(index))
            if advertises { small.ignoresRange = true } else { small.acceptsRanges = false }
            world.origin.serve("/s\(index).bin", small)
            jobs += "  - {id: s\(index), url: \"{origin}/s\(index).bin\"}\n"
        }
        let report = try await world.run("version: 1\nconcurrency: 4\njobs:\n" + jobs)
        let served = world.origin.bytesServed("/big.bin")
        let digest = try? world.sha256(ofFile: "out.bin")
        await world.close()

        #expect(report.jobs.allSatisfy { $0.status == .downloaded && $0.attempts == 1 }, "\(report.jobs.map(\.error))")
        #expect(digest == Harness.sha256(.generated(size: Self.size, seed: 31)))
        #expect(served == Self.size)
    }

    /// gzip-compressed bytes of `data`, from the system's gzip.
    static func gzip(_ data: Data) async throws -> Data {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("gz-\(UUID().uuidString)")
        try data.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let gzip = try await ToolRun.run(["gzip", "-c", "-n"], input: input)
        #expect(gzip.status == 0)
        return gzip.stdout
    }

    /// A `.tar.gz` served with `Content-Encoding: gzip` (a common nginx/Apache misconfiguration)
    /// and a gzip bomb (64 KiB that inflate to 64 MiB): the file is the bytes on the wire,
    /// never inflated, whatever the transport.
    @Test(arguments: [1 << 20, 64 << 20])
    func contentEncodingIsNeverDecoded(inflated: Int) async throws {
        let world = try await Harness()
        let plain = inflated == 1 << 20 ? Data(OriginContent.generated(size: Int64(inflated), seed: 4).allBytes) : Data(count: inflated)
        let wire = try await Self.gzip(plain)
        var file = OriginFile.bytes(Array(wire))
        file.extraHeaders = [("Content-Encoding", "gzip")]
        world.origin.serve("/a.tar.gz", file)
        let report = try await world.run(world.single("/a.tar.gz", dest: "a.tar.gz"))
        let stored = try? Data(contentsOf: URL(fileURLWithPath: world.path("a.tar.gz")))
        await world.close()

        #expect(report.jobs[0].status == .downloaded, "\(String(describing: report.jobs[0].error))")
        #expect(stored == wire)
        #expect(report.jobs[0].size == Int64(wire.count))
    }

    /// An object store's `x-amz-checksum-sha256` sent with a whole body is checked like a
    /// pinned checksum: a store (or a proxy before it) serving other bytes than it announces
    /// fails `checksum_mismatch` and nothing is published; the honest mirror after it serves.
    /// A composite checksum (of a multipart object's parts) is not the content's and is ignored.
    @Test func anAnnouncedObjectChecksumIsVerified() async throws {
        let world = try await Harness()
        let content = OriginContent.generated(size: 5000, seed: 81)
        let sha256 = Harness.sha256(content)
        var lying = OriginFile(content: content)
        lying.extraHeaders = [("x-amz-checksum-sha256", Data(repeating: 9, count: 32).base64EncodedString())]
        world.origin.serve("/lying.bin", lying)
        var honest = OriginFile(content: content)
        honest.extraHeaders = [("x-amz-checksum-sha256", Data(hex: sha256).base64EncodedString())]
        world.origin.serve("/honest.bin", honest)
        var composite = OriginFile(content: content)
        composite.extraHeaders = [("x-amz-checksum-sha256", Data(repeating: 9, count: 32).base64EncodedString()),
                                  ("x-amz-checksum-type", "COMPOSITE")]
        world.origin.serve("/composite.bin", composite)
        let report = try await world.run("""
            version: 1
            output_dir: out
            jobs:
              - {id: lying, url: "\(world.origin.url("/lying.bin"))", dest: lying.bin, retries: 0}
              - {id: both, urls: ["\(world.origin.url("/lying.bin"))", "\(world.origin.url("/honest.bin"))"], dest: both.bin, retries: 0}
              - {id: composite, url: "\(world.origin.url("/composite.bin"))", dest: composite.bin}
            """)
        let published = world.exists("out/lying.bin")
        await world.close()
        let jobs = Dictionary(uniqueKeysWithValues: report.jobs.map { ($0.id, $0) })
        #expect(jobs["lying"]?.status == .failed && jobs["lying"]?.error?.code == .checksumMismatch, "\(String(describing: jobs["lying"]?.error))")
        #expect(jobs["lying"]?.error?.message.contains("the server announced") == true)
        #expect(!published)
        #expect(jobs["both"]?.status == .downloaded && jobs["both"]?.checksums?["sha256"] == sha256)
        #expect(jobs["composite"]?.status == .downloaded)
    }

    // MARK: - Metadata files

    /// The sidecar is replaced by rename, so a reader (or a kill) at any instant sees a whole
    /// sidecar, never the empty or half-written file an in-place rewrite leaves.
    @Test func sidecarWritesAreNeverTorn() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = PartialFiles(root: try SafeDirectory.root(directory, create: false), dest: "x.bin")
        #expect(FileManager.default.createFile(atPath: directory + "/x.bin.part", contents: Data(count: 10)))
        let first = Sidecar(url: "http://h/x.bin", urlSHA256: String(repeating: "a", count: 64), etag: "\"v\"",
                            lastModified: nil, totalSize: 1 << 30)
        try files.writeSidecar(first)
        let writer = Thread {
            var sidecar = first
            for index in 0..<3000 {
                sidecar.rangesDone = ByteRanges((0..<(index % 50 + 1)).map { Int64($0 * 1000)..<Int64($0 * 1000 + 500) })
                try? files.writeSidecar(sidecar)
            }
        }
        writer.start()
        var reads = 0, torn = 0
        while !writer.isFinished {
            reads += 1
            if files.local()?.sidecar == nil { torn += 1 }
        }
        #expect(reads > 10)
        #expect(torn == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(leftovers == ["x.bin.part", "x.bin.part.json"])
    }

    // MARK: - File systems

    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("batchfetch-fs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Symlinks planted at the part, the sidecar and the dest point outside output_dir: nothing
    /// is written through any of them — for a small file of known size too, whose bytes go to
    /// a part without a name, linked over the dest's symlink at the end.
    @Test(arguments: [false, true]) func plantedSymlinksAreNeverWrittenThrough(small: Bool) async throws {
        let size: Int64 = small ? 4096 : 6 << 20
        let sized = small ? ", size: 4096" : ""
        let world = try await Harness()
        let outside = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: outside) }
        for name in ["part", "sidecar", "dest"] {
            try Data("precious \(name)\n".utf8).write(to: URL(fileURLWithPath: outside + "/" + name))
        }
        world.origin.serve("/a.bin", .generated(size: size, seed: 1))
        world.origin.serve("/b.bin", .generated(size: size, seed: 2))
        // a: a symlink at the part (the job must refuse it); b: at its sidecar and its dest
        // (replaced by the real files, never followed).
        try FileManager.default.createSymbolicLink(atPath: world.path("a.bin.part"), withDestinationPath: outside + "/part")
        try FileManager.default.createSymbolicLink(atPath: world.path("b.bin.part.json"), withDestinationPath: outside + "/sidecar")
        try FileManager.default.createSymbolicLink(atPath: world.path("b.bin"), withDestinationPath: outside + "/dest")
        let report = try await world.run("""
            version: 1
            jobs:
              - {id: a, url: "{origin}/a.bin", dest: a.bin\(sized)}
              - {id: b, url: "{origin}/b.bin", dest: b.bin\(sized)}
            """)
        let digest = try? world.sha256(ofFile: "b.bin")
        let bIsLink = (try? FileManager.default.destinationOfSymbolicLink(atPath: world.path("b.bin"))) != nil
        await world.close()

        let a = report.jobs.first { $0.id == "a" }, b = report.jobs.first { $0.id == "b" }
        #expect(a?.status == .failed && a?.error?.code == .unsafePath, "\(String(describing: a?.error))")
        #expect(b?.status == .downloaded)
        #expect(digest == Harness.sha256(.generated(size: size, seed: 2)))
        #expect(!bIsLink)
        for name in ["part", "sidecar", "dest"] {
            #expect(try String(contentsOfFile: outside + "/" + name, encoding: .utf8) == "precious \(name)\n")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).count == 3)
    }

    /// A directory inside output_dir is swapped for a symlink to another directory after
    /// validation, while the run goes on: the job that writes there fails `unsafe_path`, and
    /// nothing lands outside.
    @Test func aDirectorySwappedForASymlinkMidRunIsRefused() async throws {
        let world = try await Harness()
        let outside = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try FileManager.default.createDirectory(atPath: world.path("sub"), withIntermediateDirectories: true)
        // a is held unanswered until the swap is done: b, which depends on it, starts after.
        var held = OriginFile.generated(size: 1 << 20, seed: 1)
        held.held = true
        world.origin.serve("/a.bin", held)
        world.origin.serve("/b.bin", .generated(size: 1 << 20, seed: 2))
        let run = try world.start("""
            version: 1
            defaults: {timeout: 10m}
            jobs:
              - {id: a, url: "{origin}/a.bin", dest: a.bin}
              - {id: b, url: "{origin}/b.bin", dest: sub/b.bin, depends_on: [a]}
            """)
        var swapped = false
        for await event in run.events {
            if case .jobStarted(let id, _, _) = event, id == "a" {
                try FileManager.default.moveItem(atPath: world.path("sub"), toPath: world.path("sub-old"))
                try FileManager.default.createSymbolicLink(atPath: world.path("sub"), withDestinationPath: outside)
                swapped = true
                world.origin.update("/a.bin") { $0.held = false }
            }
        }
        let report = await run.report
        await world.close()

        #expect(swapped)
        let a = report.jobs.first { $0.id == "a" }, b = report.jobs.first { $0.id == "b" }
        #expect(a?.status == .downloaded)
        #expect(b?.status == .failed && b?.error?.code == .unsafePath, "\(String(describing: b?.error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    }

    /// Another process renames a file of its own over `<dest>.part` while the job writes the
    /// body: the job never publishes whatever has the part's name at the end (until this test,
    /// that file went to `dest`, reported with the digests of the bytes the job had written).
    /// Its own file, now without a name, cannot be linked again, so the job fails `in_use`, and
    /// the other file stays where it is.
    @Test func aPartReplacedMidBodyIsNotPublished() async throws {
        let world = try await Harness()
        let (report, replaced) = try await runReplacingThePartMidBody(world)
        let digest = try? world.sha256(ofFile: "p.bin")
        let other = try? Data(contentsOf: URL(fileURLWithPath: world.path("p.bin.part")))
        await world.close()

        #expect(replaced)
        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.code == .inUse,
                "\(String(describing: report.jobs[0].error)), attempts \(String(describing: report.jobs[0].attempts))")
        #expect(digest == nil)
        #expect(other == Data("theirs".utf8))
    }

    /// The job that lost its part's name leaves its sidecar; the next run must not resume the
    /// other process's file under it (the manifest gives a size and no checksum: a resume from
    /// its 6 bytes would have published them followed by the server's bytes from offset 6).
    @Test func aSidecarLeftBesideAnotherFileIsNotResumed() async throws {
        let world = try await Harness()
        let (first, replaced) = try await runReplacingThePartMidBody(world)
        let second = try await world.run(Self.replacedPartManifest(world))
        let digest = try? world.sha256(ofFile: "p.bin")
        await world.close()

        #expect(replaced && first.jobs[0].error?.code == .inUse)
        #expect(second.jobs[0].status == .downloaded, "\(String(describing: second.jobs[0].error))")
        #expect(digest == Harness.sha256(Self.replacedPartContent))
    }

    /// A part replaced mid-body whose job then fails its checksum: the job's partial is
    /// removed, the other process's file at the part's name is not.
    @Test func aPartReplacedMidBodyIsNotRemovedWithTheFailedJobs() async throws {
        let world = try await Harness()
        let wrong = String(repeating: "0", count: 64)
        let (report, replaced) = try await runReplacingThePartMidBody(world, extra: "\nchecksum: sha256:\(wrong)")
        let other = try? Data(contentsOf: URL(fileURLWithPath: world.path("p.bin.part")))
        let published = world.exists("p.bin")
        await world.close()

        #expect(replaced && report.jobs[0].status == .failed, "\(String(describing: report.jobs[0].error))")
        #expect(other == Data("theirs".utf8))
        #expect(!published)
    }

    private static let replacedPartContent = OriginContent.generated(size: 6 << 20, seed: 12)

    /// Idle timeout well over any wait of the test's: a timed-out attempt would be retried from
    /// where the origin no longer pauses, and publish before the test replaces anything.
    private static func replacedPartManifest(_ world: Harness, extra: String = "") -> String {
        world.single("/p.bin", dest: "p.bin", extra: "size: \(6 << 20)\nsegments: 1\ntimeout: 120s" + extra)
    }

    /// Runs a job that pauses after its first megabyte, renames another file over its part, lets
    /// it go on; returns its report and whether the rename was made.
    private func runReplacingThePartMidBody(_ world: Harness, extra: String = "") async throws -> (RunReport, Bool) {
        var file = OriginFile(content: Self.replacedPartContent)
        file.faults = [.pause(afterBytes: 1 << 20)]
        file.paused = true
        world.origin.serve("/p.bin", file)
        let run = try world.start(Self.replacedPartManifest(world, extra: extra))
        // The first megabyte is out and the origin waits: the job has its part open.
        let midBody = await eventually { world.origin.bytesServed("/p.bin") >= 1 << 20 }
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: world.path("theirs.tmp")))
        let replaced = midBody && rename(world.path("theirs.tmp"), world.path("p.bin.part")) == 0
        world.origin.update("/p.bin") { $0.paused = false }
        return (await run.report, replaced)
    }

    /// Another process (here: another owner in this one) holds the part's lock, as a second run
    /// on a nested output directory would: the job fails `in_use` and writes nothing.
    @Test func aPartOwnedByAnotherWriterIsLeftAlone() async throws {
        let world = try await Harness()
        world.origin.serve("/a.bin", .generated(size: 6 << 20, seed: 1))
        let other = PartialFiles(root: try SafeDirectory.root(world.directory.path, create: false), dest: "a.bin")
        let held = try other.openPart()
        defer { close(held) }
        _ = pwrite(held, "theirs", 6, 0)
        let report = try await world.run(world.single("/a.bin", dest: "a.bin"))
        let part = try? Data(contentsOf: URL(fileURLWithPath: world.path("a.bin.part")))
        let published = world.exists("a.bin")
        await world.close()

        #expect(report.jobs[0].status == .failed && report.jobs[0].error?.code == .inUse)
        #expect(part == Data("theirs".utf8))
        #expect(!published)
    }

    /// A legal 252-byte name: its part and sidecar names are cut to fit NAME_MAX (with a hash of
    /// the whole name, the same on every run), and a resume finds them.
    @Test func aLongNameStillHasPartAndSidecar() async throws {
        let world = try await Harness()
        let name = String(repeating: "n", count: 248) + ".bin"
        var file = OriginFile.generated(size: 6 << 20, seed: 9)
        file.faults = [.drop(afterBytes: 5 << 20)]
        world.origin.serve("/f.bin", file)
        let first = try await world.run(world.single("/f.bin", dest: name, extra: "retries: 0"))
        let names = try FileManager.default.contentsOfDirectory(atPath: world.directory.path)
        world.origin.resetCounters()
        let second = try await world.run(world.single("/f.bin", dest: name, extra: "retries: 0"))
        let served = world.origin.bytesServed("/f.bin")
        let digest = try? world.sha256(ofFile: name)
        await world.close()

        #expect(first.jobs[0].status == .failed && first.jobs[0].error?.code == .connection, "\(String(describing: first.jobs[0].error))")
        #expect(names.contains(DestPath.partName(for: name)) && names.contains(DestPath.sidecarName(for: name)))
        #expect(names.allSatisfy { $0.utf8.count <= 255 })
        #expect(second.jobs[0].status == .downloaded)
        #expect(second.jobs[0].resumedFrom ?? 0 > 0)
        #expect(served < 6 << 20)
        #expect(digest == Harness.sha256(.generated(size: 6 << 20, seed: 9)))
    }
}
