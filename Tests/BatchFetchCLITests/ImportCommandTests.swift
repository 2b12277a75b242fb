import Crypto
import Foundation
import Testing
import TestOrigin

/// `batchfetch import` and `batchfetch add` end to end: each format from Tests/Fixtures/import
/// made into a manifest, run, every file correct and its checksum enforced; `add` on a manifest
/// people wrote, refusing what it must and keeping every other byte.
@Suite(.serialized) struct ImportCommandTests {
    static let data = OriginFile.generated(size: 300_000, seed: 71)
    static let notes = OriginFile.generated(size: 1_000, seed: 72)

    private func hex(_ file: OriginFile) -> String {
        SHA256.hash(data: file.content.allBytes).map { String(format: "%02x", $0) }.joined()
    }

    private func origin() async throws -> TestOrigin {
        let origin = try await TestOrigin.start()
        origin.serve("/a/data.bin", Self.data)
        origin.serve("/b/data.bin", Self.data)
        origin.serve("/a/notes.txt", Self.notes)
        origin.serve("/a/other.bin", Self.notes)
        origin.serve("/rel/sub%20dir/data.bin", Self.data)
        origin.serve("/rel/notes.txt", Self.notes)
        return origin
    }

    /// A fixture with its placeholders filled: the origin's host and the files' digests.
    private func fixture(_ name: String, origin: TestOrigin, into directory: TemporaryDirectory, sha: String? = nil) throws {
        let data = try Data(contentsOf: BinaryRunner.fixtures.appendingPathComponent("import/\(name)"))
        let sha1 = Insecure.SHA1.hash(data: Self.notes.content.allBytes).map { String(format: "%02x", $0) }.joined()
        let md5 = Insecure.MD5.hash(data: Self.data.content.allBytes).map { String(format: "%02x", $0) }.joined()
        // The Metalink's `<pieces>`: the sha256 of each 256 KiB piece of the data file.
        func piece(_ bytes: Range<Int64>) -> String {
            SHA256.hash(data: Self.data.content.bytes(in: bytes)).map { String(format: "%02x", $0) }.joined()
        }
        let host = origin.url("/").dropFirst("http://".count).dropLast()
        var text = String(decoding: data, as: UTF8.self)
        for (placeholder, value) in [("HOST", String(host)), ("SHA_DATA", sha ?? hex(Self.data)), ("SHA_NOTES", hex(Self.notes)),
                                     ("SHA1_OTHER", sha1), ("MD5_DATA", md5), ("SIZE_DATA", "\(Self.data.content.allBytes.count)"),
                                     ("PIECE0_DATA", piece(0..<262_144)), ("PIECE1_DATA", piece(262_144..<300_000))] {
            text = text.replacingOccurrences(of: placeholder, with: value)
        }
        try Data(text.utf8).write(to: directory.url.appendingPathComponent(name))
    }

    private func contents(_ directory: TemporaryDirectory, _ path: String) -> Data? {
        FileManager.default.contents(atPath: directory.url.appendingPathComponent(path).path)
    }

    /// Each format: imported, validated, run; the files are the origin's; a wrong digest in the
    /// input fails the run with checksum_mismatch and publishes nothing.
    @Test(arguments: [
        ("aria2-input.txt", [String](), ["sets/one/data copy.bin", "other.bin"]),
        ("release.meta4", [], ["iso/image.bin", "notes.txt"]),
        ("SHA256SUMS", ["--base-url", "BASE/rel/"], ["sub dir/data.bin", "notes.txt"]),
        ("list.csv", [], ["quoted, dir/data.bin", "notes.txt"]),
    ])
    func aFormatRoundTrips(file: String, options: [String], dests: [String]) async throws {
        let origin = try await origin()
        let directory = try TemporaryDirectory()
        try fixture(file, origin: origin, into: directory)
        let base = String(origin.url("/").dropLast())
        let arguments = options.map { $0.replacingOccurrences(of: "BASE", with: base) }
        let imported = try await BinaryRunner.run(["import", file, "--output-dir", "data", "-o", "m.yaml"] + arguments, in: directory.url)
        #expect(imported.status == 0, "\(imported.stderr)")
        let manifest = String(decoding: contents(directory, "m.yaml") ?? Data(), as: UTF8.self)
        #expect(manifest.contains("# \(file):"), "each job says where it came from:\n\(manifest)")
        #expect(manifest.contains("checksum:"), "\(manifest)")
        if file.hasSuffix(".meta4") { #expect(manifest.contains("pieces: {length: 262144, sha256: ["), "\(manifest)") }
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)\n\(manifest)")
        for dest in dests {
            let body = contents(directory, "data/\(dest)")
            #expect(body.map(Array.init) == Self.data.content.allBytes || body.map(Array.init) == Self.notes.content.allBytes, "\(dest)")
        }

        // The same input with a wrong digest for the data file: the run refuses it.
        let wrong = try TemporaryDirectory()
        try fixture(file, origin: origin, into: wrong, sha: String(repeating: "0", count: 64))
        #expect(try await BinaryRunner.run(["import", file, "--output-dir", "data", "-o", "m.yaml"] + arguments, in: wrong.url).status == 0)
        let refused = try await BinaryRunner.run(["run", "m.yaml"], in: wrong.url)
        try await origin.shutdown()
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("checksum_mismatch"), "\(refused.stderr)")
        #expect(contents(wrong, "data/\(dests[0])") == nil, "nothing published at a wrong digest")
    }

    @Test func aLineNotUnderstoodWritesNothingUnlessSkipped() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("in.txt", "http://h/a.bin\n\thttp://h/b.bin\n  header=Cookie: x\nhttp://h/c.bin\n  out=c.bin\n")
        let refused = try await BinaryRunner.run(["import", "in.txt", "--format", "aria2", "-o", "m.yaml"], in: directory.url)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("in.txt:2: an option before any URI") == false, "\(refused.stderr)")
        #expect(refused.stderr.contains("in.txt:3: the aria2 option 'header' is not supported"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("m.yaml").path))

        let skipped = try await BinaryRunner.run(["import", "in.txt", "--format", "aria2", "--skip-invalid"], in: directory.url)
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.stdout.contains("url: \"http://h/c.bin\"") && !skipped.stdout.contains("http://h/a.bin"), "\(skipped.stdout)")
        #expect(skipped.stderr.contains("(left out)"))

        try directory.write("exists.yaml", "keep me\n")
        try directory.write("u.txt", "http://h/x.bin\n")
        let kept = try await BinaryRunner.run(["import", "u.txt", "-o", "exists.yaml"], in: directory.url)
        #expect(kept.status == 2 && String(decoding: contents(directory, "exists.yaml")!, as: UTF8.self) == "keep me\n")
        let pinWithoutOutput = try await BinaryRunner.run(["import", "u.txt", "--pin"], in: directory.url)
        #expect(pinWithoutOutput.status == 2 && pinWithoutOutput.stderr.contains("--pin needs -o"))
    }

    @Test func importPinWritesTheLockfile() async throws {
        let origin = try await origin()
        let directory = try TemporaryDirectory()
        try directory.write("urls.txt", "\(origin.url("/a/data.bin"))\n\(origin.url("/a/notes.txt"))\n")
        let imported = try await BinaryRunner.run(["import", "urls.txt", "-o", "m.yaml", "--pin"], in: directory.url)
        try await origin.shutdown()
        #expect(imported.status == 0, "\(imported.stderr)")
        let lock = try JSONSerialization.jsonObject(with: contents(directory, "m.lock.json") ?? Data()) as? [String: Any]
        let jobs = lock?["jobs"] as? [String: [String: Any]] ?? [:]
        #expect(jobs["data.bin"]?["sha256"] as? String == hex(Self.data), "\(jobs)")
        #expect(jobs["notes.txt"]?["size"] as? Int == Self.notes.content.allBytes.count)
    }

    /// `add` appends in the manifest's style and keeps every byte; a dest or id another job has
    /// is refused with the file untouched; `--pin` writes the size and sha256 into the new job.
    @Test func addAppendsRefusesDuplicatesAndPins() async throws {
        let origin = try await origin()
        let directory = try TemporaryDirectory()
        let original = ["# Our datasets. Keep the comments!", "version: 1", "output_dir: data", "defaults: &base {retries: 1}", "jobs:",
                        "  - {id: notes, url: \"\(origin.url("/a/notes.txt"))\", dest: notes.txt}   # small", "", ""].joined(separator: "\r\n")
        try directory.write("m.yaml", original)
        let added = try await BinaryRunner.run(["add", "m.yaml", origin.url("/a/data.bin"), "--pin"], in: directory.url)
        #expect(added.status == 0, "\(added.stderr)")
        let text = String(decoding: contents(directory, "m.yaml")!, as: UTF8.self)
        #expect(text.hasPrefix(original.components(separatedBy: "   # small\r\n")[0] + "   # small\r\n"), "\(text.debugDescription)")
        #expect(text.contains("- {id: \"data.bin\", url: \"\(origin.url("/a/data.bin"))\", dest: \"data.bin\", size: 300000, "
            + "checksum: \"sha256:\(hex(Self.data))\"}\r\n"), "\(text.debugDescription)")
        #expect(text.hasSuffix("\r\n\r\n"), "the blank line after the jobs is still there")
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(rerun.status == 0 && rerun.stderr.contains("1 downloaded, 1 up to date"), "\(rerun.stderr)")

        let before = contents(directory, "m.yaml")
        let duplicate = try await BinaryRunner.run(["add", "m.yaml", origin.url("/b/data.bin")], in: directory.url)
        #expect(duplicate.status == 2)
        #expect(duplicate.stderr.contains("dest 'data.bin' is already job 'data.bin''s"), "\(duplicate.stderr)")
        let sameID = try await BinaryRunner.run(["add", "m.yaml", origin.url("/b/data.bin"), "--id", "notes", "--dest", "b.bin"], in: directory.url)
        #expect(sameID.status == 2 && sameID.stderr.contains("a job 'notes' exists already"))
        let gone = try await BinaryRunner.run(["add", "m.yaml", origin.url("/gone.bin"), "--pin"], in: directory.url)
        try await origin.shutdown()
        #expect(gone.status == 1, "\(gone.stderr)")
        #expect(contents(directory, "m.yaml") == before, "refused and failed adds leave the file as it was")
    }

    /// `add` edits the file a symlink points to (the link stays a link), and an edit made while
    /// it ran (here, during its --pin download, which the origin holds) is not overwritten.
    @Test func addFollowsASymlinkAndKeepsAnEditMadeMeanwhile() async throws {
        let origin = try await origin()
        var held = Self.data
        held.held = true
        origin.serve("/held.bin", held)
        let directory = try TemporaryDirectory()
        try directory.write("real.yaml", "version: 1\noutput_dir: data\njobs:\n  - {id: notes, url: \"\(origin.url("/a/notes.txt"))\"}\n")
        let link = directory.url.appendingPathComponent("m.yaml")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "real.yaml")
        let added = try await BinaryRunner.run(["add", "m.yaml", origin.url("/a/data.bin")], in: directory.url)
        #expect(added.status == 0, "\(added.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == "real.yaml")
        #expect(String(decoding: contents(directory, "real.yaml")!, as: UTF8.self).contains("id: \"data.bin\""))

        let process = try BinaryRunner.start(["add", "m.yaml", origin.url("/held.bin"), "--pin"], in: directory.url)
        let asked = await BinaryRunner.wait { origin.arrivals("/held.bin") > 0 }
        #expect(asked, "the download never started")
        let edited = String(decoding: contents(directory, "real.yaml")!, as: UTF8.self) + "# edited meanwhile\n"
        try directory.write("real.yaml", edited)
        origin.update("/held.bin") { $0.held = false }
        await BinaryRunner.exit(of: process)
        try await origin.shutdown()
        let log = String(decoding: contents(directory, "stderr.log") ?? Data(), as: UTF8.self)
        #expect(process.terminationStatus == 1, "\(log)")
        #expect(log.contains("changed while batchfetch add ran"), "\(log)")
        #expect(String(decoding: contents(directory, "real.yaml")!, as: UTF8.self) == edited)
    }

    /// Hostile names in an input (a SUMS entry climbing out, a Metalink name that is absolute)
    /// stop the import, even with --skip-invalid, naming the input line; nothing is written.
    @Test func hostileNamesStopTheImport() async throws {
        let directory = try TemporaryDirectory()
        let sha = String(repeating: "a", count: 64)
        try directory.write("SHA256SUMS", "\(sha)  ok.bin\n\(sha)  ../../etc/passwd\n")
        try directory.write("evil.meta4", """
            <?xml version="1.0"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="/etc/cron.d/x"><url>http://h/x</url></file>
            </metalink>
            """)
        for (file, arguments, line, problem) in [("SHA256SUMS", ["--base-url", "http://h/r/"], "SHA256SUMS:2", "escapes output_dir"),
                                                 ("evil.meta4", [], "evil.meta4:3", "is an absolute path")] {
            let refused = try await BinaryRunner.run(["import", file, "--skip-invalid", "-o", "m.yaml"] + arguments, in: directory.url)
            #expect(refused.status == 2, "\(refused.stderr)")
            #expect(refused.stderr.contains(problem) && refused.stderr.contains("(\(line))"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("m.yaml").path))
        }
    }
}
