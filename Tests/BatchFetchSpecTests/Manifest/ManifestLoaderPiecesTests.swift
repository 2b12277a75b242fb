@testable import BatchFetchSpec
import Foundation
import Testing

/// Loading in pieces on several cores gives exactly what loading whole gives: the same manifest,
/// or the same problems at the same places, and falls back to one piece whenever a cut is in
/// doubt.
@Suite struct ManifestLoaderPiecesTests {
    private static func loader(pieces: Int) -> ManifestLoader {
        var loader = ManifestLoader(environment: Fixtures.environment)
        loader.minimumPieceSize = 0
        loader.pieceCount = pieces
        return loader
    }

    /// The manifest, printed field by field, or the diagnostics.
    private func outcome(_ text: String, pieces: Int, base: String = "/srv") -> String {
        outcome(Array(text.utf8), pieces: pieces, base: base)
    }

    private func outcome(_ bytes: [UInt8], pieces: Int, base: String) -> String {
        do {
            var printed = ""
            dump(try Self.loader(pieces: pieces).load(bytes: bytes, displayPath: "m.yaml", baseDirectory: base), to: &printed)
            return printed
        } catch {
            return error.description
        }
    }

    private func wasCut(_ text: String, pieces: Int) -> Bool {
        ManifestLoader.parsePieces(Array(text.utf8), count: pieces) != nil
    }

    /// Sixty jobs with a problem of every kind spread over them, anchors from the header, and
    /// dependencies, duplicates and a cycle that cross the cuts.
    private static let troubled: String = {
        var text = "version: 1\nper_host: 2\ndefaults: &d\n  retries: 3\n  headers: {X-Team: data}\nbase: &b {retries: 5}\njobs:\n"
        for number in 1...60 {
            switch number {
            case 7: text += "  - url: https://h.example/noid\n"  // job #7 has no id
            case 13: text += "  - id: j13\n    url: https://h.example/13\n    size: -4\n"
            case 20: text += "  - id: j20\n    url: https://h.example/20\n    <<: *b\n    colour: red\n"
            case 31: text += "  - id: j2\n    url: https://h.example/dup\n"  // id of job 2 again
            case 38: text += "  - id: j38\n    url: https://h.example/38\n    depends_on: [j55, nowhere]\n"
            case 47: text += "  - {id: j47, url: 'https://h.example/47', segments: 8}\n"
            case 55: text += "  - id: j55\n    url: https://h.example/55\n    depends_on: [j38]\n"
            case 58: text += "  - id: j58\n    url: ftp://h.example/58\n    dest: ../escape\n"
            default: text += "  - id: j\(number)\n    url: https://h.example/\(number)\n    dest: d/\(number).bin\n"
            }
        }
        return text
    }()

    @Test(arguments: [2, 3, 7, 60])
    func problemsAcrossPiecesAreThoseOfTheWholeFile(pieces: Int) {
        #expect(wasCut(Self.troubled, pieces: pieces))
        let whole = outcome(Self.troubled, pieces: 1)
        #expect(whole.contains("job #7: missing required key 'id'"))
        #expect(whole.contains("'per_host: 2' is less than 'segments: 8' of job 'j47'"))
        #expect(outcome(Self.troubled, pieces: pieces) == whole)
    }

    @Test(arguments: [2, 5, 40])
    func aValidManifestIsTheSameManifest(pieces: Int) {
        var text = "version: 1\noutput_dir: ${DIR}\ndefaults: &d {retries: 2, headers: {X-A: b}}\njobs:\n"
        for number in 1...40 {
            text += "  - id: j\(number)\n    <<: *d\n    urls: [https://a.example/\(number), https://b.example/\(number)]\n"
            text += "    dest: \"d/${NAME}.\(number)\"\n    size: \(number)KiB\n    depends_on: [\(number > 1 ? "j\(number - 1)" : "")]\n"
        }
        #expect(wasCut(text, pieces: pieces))
        let whole = outcome(text, pieces: 1)
        #expect(whole.contains("j40"))
        #expect(outcome(text, pieces: pieces) == whole)
    }

    @Test(arguments: [
        // An alias to an anchor in an earlier piece's items.
        ("an alias across a cut", "  - id: a\n    url: &u https://h.example/a\n", "  - id: z\n    url: *u\n    dest: z\n"),
        // The header's anchor defined again by an item before an alias to it.
        ("a header anchor redefined", "  - id: a\n    url: https://h.example/a\n    headers: &d {X-B: c}\n", "  - id: z\n    url: https://h.example/z\n    <<: *d\n"),
        // A quoted scalar whose second line looks like an item.
        ("a quoted scalar spanning a cut", "  - id: a\n    url: https://h.example/a\n    method: POST\n    body: \"x\n  - id: fake\n    y\"\n", ""),
        // A syntax error in one piece.
        ("a syntax error", "  - id: a\n    url: [https://h.example/a\n", ""),
    ])
    func doubtfulCutsFallBackToTheWholeFile(what: String, early: String, late: String) {
        var text = "version: 1\ndefaults: &d {retries: 2}\njobs:\n"
        for number in 1...20 { text += "  - id: j\(number)\n    url: https://h.example/\(number)\n" }
        text += early
        for number in 21...40 { text += "  - id: j\(number)\n    url: https://h.example/\(number)\n" }
        text += late
        #expect(!wasCut(text, pieces: 40), "\(what)")
        #expect(outcome(text, pieces: 40) == outcome(text, pieces: 1), "\(what)")
    }

    /// Every fixture and example loads the same in pieces (most are too small to cut, and stay
    /// whole; the point is that none changes).
    @Test func everyFixtureAndExampleLoadsTheSame() throws {
        var files: [URL] = []
        for directory in [Fixtures.invalid, Fixtures.fuzz, Fixtures.examples] {
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
            files += names.sorted().map { directory.appendingPathComponent($0) }
        }
        #expect(files.count > 50)
        for file in files {
            let bytes = Array(try Data(contentsOf: file))
            let base = file.deletingLastPathComponent().path
            for pieces in [2, 9] {
                #expect(outcome(bytes, pieces: pieces, base: base) == outcome(bytes, pieces: 1, base: base), "\(file.lastPathComponent)")
            }
        }
    }
}
