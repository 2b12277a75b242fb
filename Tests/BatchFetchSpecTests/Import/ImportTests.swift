@testable import BatchFetchSpec
import Foundation
import Testing

/// The importers on the awkward cases of each format, and the names and text they lead to.
@Suite struct ImportTests {
    static let sha = String(repeating: "ab", count: 32)

    @Test func formatsAreToldFromNamesAndContent() {
        #expect(ImportFormat.guess(path: "x.meta4", text: "") == .metalink)
        #expect(ImportFormat.guess(path: "in.txt", text: "<?xml version=\"1.0\"?>\n<metalink>") == .metalink)
        #expect(ImportFormat.guess(path: "SHA512SUMS", text: "") == .sha256sums)
        #expect(ImportFormat.guess(path: "sums.txt", text: "\(Self.sha)  a.bin\n\(Self.sha) *b.bin\n") == .sha256sums)
        #expect(ImportFormat.guess(path: "in.txt", text: "http://h/a\n  out=x\n") == .aria2)
        #expect(ImportFormat.guess(path: "in.txt", text: "url,dest\nhttp://h/a,a\n") == .csv)
        #expect(ImportFormat.guess(path: "in.txt", text: "# mine\nhttp://h/a\nhttp://h/b\n") == .urls)
    }

    @Test func urlListsTakeSeveralPerLineAndSayWhatIsNotAURL() {
        let result = URLListImport.read("\u{FEFF}http://h/a.bin\r\n\r\n# c\r\nhttp://h/b http://h/c\r\nmailto:x@y\r\n", file: "l.txt")
        #expect(result.jobs.map(\.urls) == [["http://h/a.bin"], ["http://h/b"], ["http://h/c"]])
        #expect(result.jobs.map(\.origin) == ["l.txt:1", "l.txt:4", "l.txt:4"])
        #expect(result.problems == [ImportProblem(file: "l.txt", line: 5, "'mailto:x@y' is not an http, https, s3 or gs URL")])
    }

    @Test func aria2OptionsWithSpacesMirrorsAndChecksums() {
        let text = "http://h/a/x.bin\thttp://h/b/x.bin\n  out=my file.bin\n  dir=d one\n  checksum=sha-256=\(Self.sha)\n"
            + "  split=3\n  continue=true\nhttp://h/y.bin\n  header=Authorization: x\nhttp://h/z.bin\n  checksum=adler32=1234\n"
            + "http://h/w.bin\n"
        let result = Aria2InputImport.read(text, file: "i")
        #expect(result.jobs.count == 2)
        #expect(result.jobs[0] == ImportedJob(urls: ["http://h/a/x.bin", "http://h/b/x.bin"], dest: "d one/my file.bin",
                                             checksums: [Checksum(algorithm: .sha256, hex: Self.sha)], segments: 3, origin: "i:1"))
        #expect(result.jobs[1].urls == ["http://h/w.bin"] && result.jobs[1].dest == nil)
        #expect(result.problems.map(\.line) == [8, 10], "the entries with a header and an unknown checksum are left out whole")
        #expect(result.problems[0].message == "the aria2 option 'header' is not supported")
    }

    @Test func metalinkMirrorsByPriorityAndEveryKnownHash() throws {
        let xml = """
            <?xml version="1.0"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="d/x.iso"><size>1234</size>
                <hash type="sha-384">00</hash><hash type="sha-256">\(Self.sha)</hash><hash type="md5">\(String(repeating: "c", count: 32))</hash>
                <pieces length="262144" type="sha-1"><hash>\(String(repeating: "0", count: 40))</hash></pieces>
                <url priority="3">http://h/c</url><url>http://h/last</url><url priority="1">http://h/a</url><url priority="3">http://h/c2</url>
              </file>
              <file name="y"><url>ftp://h/y</url></file>
            </metalink>
            """
        let result = MetalinkImport.read(Data(xml.utf8), file: "m.meta4")
        #expect(result.jobs.count == 1)
        let job = try #require(result.jobs.first)
        #expect(job.urls == ["http://h/a", "http://h/c", "http://h/c2", "http://h/last"])
        #expect(job.dest == "d/x.iso" && job.size == 1234 && job.origin == "m.meta4:3")
        #expect(job.checksums.map(\.algorithm) == [.sha256, .md5])
        #expect(result.problems.map(\.message) == ["'ftp://h/y' is not an http, https, s3 or gs URL", "<file name=\"y\"> has no http(s) <url>"])

        let version3 = MetalinkImport.read(Data("<metalink version=\"3.0\" xmlns=\"http://www.metalinker.org/\"></metalink>".utf8), file: "o")
        #expect(version3.problems.first?.message.hasPrefix("Metalink 3") == true)
        let broken = MetalinkImport.read(Data("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n<file name=\"x\"></metalink>".utf8), file: "b").problems
        #expect(broken.first?.message.hasPrefix("not well-formed XML") == true, "\(broken)")
    }

    /// `<pieces type="sha-256">` becomes `pieces:`, which the manifest then loads; a length the
    /// contract does not allow, or a count that does not fit the size, is a problem at its line.
    @Test func metalinkPiecesBecomeTheJobsPieces() throws {
        let hashes = (0..<3).map { String(repeating: String($0), count: 64) }
        let xml = """
            <?xml version="1.0"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="x.bin"><size>600000</size><hash type="sha-256">\(Self.sha)</hash>
                <pieces length="262144" type="sha-256">\(hashes.map { "<hash>\($0)</hash>" }.joined())</pieces>
                <url>http://h/x.bin</url>
              </file>
              <file name="odd.bin"><size>600000</size>
                <pieces length="262144" type="sha-256"><hash>\(hashes[0])</hash></pieces>
                <url>http://h/odd.bin</url>
              </file>
              <file name="short.bin">
                <pieces length="1000" type="sha-256"><hash>\(hashes[0])</hash></pieces>
                <url>http://h/short.bin</url>
              </file>
            </metalink>
            """
        let result = MetalinkImport.read(Data(xml.utf8), file: "m.meta4")
        #expect(result.jobs.map(\.dest) == ["x.bin", "short.bin"])
        #expect(result.jobs.first?.pieces == PieceHashes(length: 262_144, sha256: hashes))
        #expect(result.problems.map(\.description) == [
            "m.meta4:8: <pieces> has 1 hashes where 600000 bytes make 3",
            "m.meta4:12: <pieces length=\"1000\"> is not a power of two from 262144 to 67108864",
        ])
        var names = ImportNames()
        let text = ManifestText.manifest(jobs: Array(result.jobs.prefix(1)), named: &names, outputDirectory: "out", sources: ["m.meta4"])
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        #expect(manifest.jobs[0].pieces == PieceHashes(length: 262_144, sha256: hashes))
    }

    @Test func sumsFilesJoinTheirAlgorithmsAndEncodePaths() {
        let sha512 = String(repeating: "d", count: 128)
        let text = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n\(Self.sha) *sub dir/a#1.bin\nSHA512 (sub dir/a#1.bin) = \(sha512)\n"
            + "\(Self.sha)  ./b.bin\ngarbage\n-----BEGIN PGP SIGNATURE-----\nxyz\n-----END PGP SIGNATURE-----\n"
        let result = SumsImport.read(text, file: "SUMS", baseURL: "https://h/rel")
        #expect(result.jobs.map(\.urls) == [["https://h/rel/sub%20dir/a%231.bin"], ["https://h/rel/b.bin"]])
        #expect(result.jobs.map(\.dest) == ["sub dir/a#1.bin", "b.bin"])
        #expect(result.jobs[0].checksums.map(\.algorithm) == [.sha256, .sha512])
        #expect(result.problems.map(\.line) == [7])
        #expect(SumsImport.read(text, file: "SUMS", baseURL: nil).problems.first?.message.contains("--base-url") == true)
    }

    @Test func namesAreDerivedAndMadeUnique() {
        var names = ImportNames(takenIDs: ["data.tar.gz"], takenDests: ["data.tar.gz"])
        #expect(names.named(ImportedJob(urls: ["http://h/x/data.tar.gz?sig=1"], origin: "")) == ("data-2.tar.gz", "data-2.tar.gz"))
        #expect(names.named(ImportedJob(urls: ["http://h/x/data.tar.gz"], origin: "")) == ("data-3.tar.gz", "data-3.tar.gz"))
        #expect(names.named(ImportedJob(urls: ["http://h/dir/"], origin: "")) == ("index.html", "index.html"))
        #expect(names.named(ImportedJob(urls: ["http://h/%C3%A9t%C3%A9%20x.bin"], origin: "")) == ("t--x.bin", "été x.bin"))
        #expect(names.named(ImportedJob(urls: ["http://h"], origin: "")) == ("index-2.html", "index-2.html"))
    }

    /// Whatever the strings, the text of a job loads back as the same job.
    @Test func quotedTextLoadsBackAsTheSameValues() throws {
        let awkward = ["http://h/a \"b\" \\c", "http://h/é?x=1#y", "http://h/tab\there", "http://h/-: [x] {y} &z *w !v |u >t %s @r `q"]
        var names = ImportNames()
        let jobs = awkward.enumerated().map { ImportedJob(urls: [$1], dest: "d/\($0) \"q\" \\ é #[x]: {y}.bin", size: 7, origin: "t:1") }
        let text = ManifestText.manifest(jobs: jobs, named: &names, outputDirectory: "out dir", sources: ["t"])
        let manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/tmp")
        #expect(manifest.jobs.map { $0.urls[0].resolved } == awkward.map { URLSyntax.encodingInvalidCharacters($0) })
        #expect(manifest.jobs.map(\.dest.resolved) == jobs.map { $0.dest! })
        #expect(manifest.outputDirectory.hasSuffix("out dir"))
    }
}
