@testable import BatchFetchSpec
import Foundation
import Testing

/// `jobs_from`: rows of csv, tsv, ndjson and plain URL lists become jobs with the manifest's
/// defaults, and every bad row is reported at the list's own `file:line:col`, all in one pass.
@Suite struct JobListTests {
    /// Writes `files` (relative path → contents) and `manifest` as `m.yaml` into a fresh
    /// directory and loads it.
    private func load(_ manifest: String, files: [String: [UInt8]]) throws(ManifestLoadError) -> Manifest {
        let directory = try! Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, bytes) in files {
            let url = directory.appendingPathComponent(name)
            try! FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: url.path, contents: Data(bytes))
        }
        let path = directory.appendingPathComponent("m.yaml").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(manifest.utf8))
        return try ManifestLoader(environment: [:]).load(path: path)
    }

    private func load(_ manifest: String, files: [String: String]) throws(ManifestLoadError) -> Manifest {
        try load(manifest, files: files.mapValues { Array($0.utf8) })
    }

    /// The diagnostics as `file:line:col: message`, the manifest's temporary path cut to `m.yaml`.
    private func problems(_ manifest: String, files: [String: String]) -> [String] {
        do {
            _ = try load(manifest, files: files)
            return ["accepted"]
        } catch .invalid(let diagnostics) {
            return diagnostics.map { ($0.file.hasSuffix("/m.yaml") ? "m.yaml" : $0.file) + ":\($0.line):\($0.column): \($0.message)" }
        } catch {
            return ["\(error)"]
        }
    }

    private static let hexA = String(repeating: "a", count: 64)
    private static let hexB = String(repeating: "B", count: 40)

    @Test func csvRowsBecomeJobsWithTheDefaults() throws {
        let csv = "\u{FEFF}URL, Size ,sha256,caption,mirrors\r\n"
            + "https://h.example/imgs/n01/a%20b.jpg,1KiB,\(Self.hexA),\"a cat, \"\"grey\"\"\",https://m1.example/a https://m2.example/a\r\n"
            + "\r\n"
            + "https://h.example/imgs/n02/c.jpg,,,,\r\n"
        let manifest = try load(
            "version: 1\ndefaults:\n  retries: 7\n  headers: {X-Team: data}\njobs:\n  - {id: readme, url: 'https://h.example/README'}\n"
                + "jobs_from:\n  - file: lists/images.csv\n",
            files: ["lists/images.csv": csv])
        #expect(manifest.jobs.map(\.id) == ["readme", "imgs/n01/a b.jpg", "imgs/n02/c.jpg"])
        #expect(manifest.lists.map(\.file) == ["lists/images.csv"])
        let first = manifest.jobs[1]
        #expect(first.dest.resolved == "imgs/n01/a b.jpg")
        #expect(first.urls.map(\.resolved) == ["https://h.example/imgs/n01/a%20b.jpg", "https://m1.example/a", "https://m2.example/a"])
        #expect(first.size == 1024)
        #expect(first.checksums == [Checksum(algorithm: .sha256, hex: Self.hexA)])
        #expect(first.settings.retries == 7)
        #expect(first.headers.map(\.name) == ["X-Team"])
        #expect(first.source.job == SourceLocation(line: 2, column: 1, file: 1))
        #expect(manifest.jobs[2].source.job == SourceLocation(line: 4, column: 1, file: 1))
        #expect(manifest.jobs[2].size == nil && manifest.jobs[2].checksums.isEmpty)
    }

    @Test func idsAndDestsComeFromColumnsTemplatesAndThePrefix() throws {
        let tsv = "url\tid\tdest\tchecksum\n"
            + "https://h.example/a/one.bin\t\t\t\n"
            + "https://h.example/a/two.bin\tsecond\t\tsha1:\(Self.hexB)\n"
            + "https://h.example/a/three.bin\t\tfixed/3.bin\t\n"
        let manifest = try load(
            "version: 1\njobs_from:\n  - {file: rows.tab, id_prefix: set1, dest: 'out/{name}'}\n  - {file: plain.list, dest: 'p/{path}'}\n",
            files: ["rows.tab": tsv, "plain.list": "# mirror of h\n\n  https://h.example/x/y.bin \r\n"])
        #expect(manifest.jobs.map(\.id) == ["set1/out/one.bin", "set1/second", "set1/fixed/3.bin", "p/x/y.bin"])
        #expect(manifest.jobs.map(\.dest.resolved) == ["out/one.bin", "out/two.bin", "fixed/3.bin", "p/x/y.bin"])
        #expect(manifest.jobs[1].checksums == [Checksum(algorithm: .sha1, hex: Self.hexB)])
        #expect(manifest.jobs[3].source.job == SourceLocation(line: 3, column: 3, file: 2))
    }

    @Test func ndjsonRowsTakeArraysOfMirrorsAndNumericSizes() throws {
        let ndjson = #"{"url": "https://h.example/d/1.bin", "size": 10, "mirrors": ["https://m.example/1.bin"], "label": 3}"# + "\n"
            + "\n"
            + #"{"url": "https://h.example/d/2.bin", "md5": "\#(String(repeating: "c", count: 32))", "id": "two", "size": null}"# + "\n"
        let manifest = try load("version: 1\njobs_from: [rows.jsonl]\n", files: ["rows.jsonl": ndjson])
        #expect(manifest.jobs.map(\.id) == ["d/1.bin", "two"])
        #expect(manifest.jobs[0].urls.map(\.resolved) == ["https://h.example/d/1.bin", "https://m.example/1.bin"])
        #expect(manifest.jobs[0].size == 10)
        #expect(manifest.jobs[1].checksums.map(\.algorithm) == [.md5])
        #expect(manifest.jobs[1].source.id == SourceLocation(line: 3, column: 87, file: 1))
    }

    @Test func autoPicksTheFormatByExtensionThenByTheFirstLine() throws {
        let files = [
            "a.data": "url,id\nhttps://h.example/a,a\n",
            "b.data": "url\tid\nhttps://h.example/b\tb\n",
            "c.data": "{\"url\": \"https://h.example/c\", \"id\": \"c\"}\n",
            "d.data": "https://h.example/d\n",
            "e.csv": "https://h.example/e\n",
        ]
        let manifest = try load("version: 1\njobs_from: [a.data, b.data, c.data, d.data]\n", files: files)
        #expect(manifest.jobs.map(\.id) == ["a", "b", "c", "d"])
        // An explicit extension wins: a URL list named .csv has no header, and says so.
        #expect(problems("version: 1\njobs_from: [e.csv]\n", files: files) == [
            "e.csv:1:1: the header row has no 'url' column; the first line holds a URL, so the list has no header: "
                + "add one (such as 'url,dest') or use 'format: lines' for a plain list of URLs",
        ])
        let lines = try load("version: 1\njobs_from: [{file: e.csv, format: lines}]\n", files: files)
        #expect(lines.jobs.map(\.id) == ["e"])
    }

    @Test func everyBadRowIsReportedAtItsPlaceInOnePass() {
        let csv = "url,size,sha256,sha265,dest\n"
            + "https://h.example/ok.bin,1,,,\n"
            + "ftp://h.example/x,-1,zz,,\n"
            + "https://h.example/y,2,,,../escape\n"
            + "\"https://h.example/q\"x,,,,\n"
            + "https://h.example/short,1\n"
            + "https://h.example/ok.bin,,,,\n"
            + "https://h.example/readme,,,,\n"
        let found = problems(
            "version: 1\njobs:\n  - {id: readme, url: 'https://h.example/readme'}\njobs_from:\n  - {file: l.csv}\n  - {file: missing.csv}\n"
                + "  - {file: l2.txt, format: xml, dest: '{stem}'}\n",
            files: ["l.csv": csv, "l2.txt": ""])
        #expect(found == [
            "m.yaml:6:12: jobs_from: cannot read 'missing.csv': No such file or directory",
            "m.yaml:7:28: jobs_from #3: 'format' must be one of auto, csv, tsv, ndjson, lines, found 'xml'",
            "m.yaml:7:39: jobs_from #3: 'dest' may use {path} (the URL's path) and {name} (its last segment), found '{stem}'",
            "l.csv:1:17: unknown column 'sha265' (did you mean 'sha256'?); columns are url, id, dest, size, checksum, sha256, "
                + "sha512, sha1, md5, mirrors (others are ignored)",
            "l.csv:3:1: unsupported URL scheme 'ftp' in 'ftp://h.example/x' (expected http, https, s3 or gs)",
            "l.csv:3:19: 'size' must not be negative, found '-1'",
            "l.csv:3:22: 'sha256': sha256 checksum must be hexadecimal digits (0-9, a-f)",
            "l.csv:4:25: dest '../escape' escapes output_dir through '..'",
            "l.csv:5:22: text after the closing quote of a field; a quote inside a quoted field is written twice (\"\")",
            "l.csv:6:1: this row has 2 fields, the header 5; a field holding the delimiter must be quoted",
            "l.csv:7:1: duplicate job id 'ok.bin' (first used at l.csv line 2, column 1)",
            "l.csv:7:1: job 'ok.bin': dest 'ok.bin' is also written by job 'ok.bin' (l.csv line 2)",
            "l.csv:8:1: duplicate job id 'readme' (first used at line 3, column 10)",
            "l.csv:8:1: job 'readme': dest 'readme' is also written by job 'readme' (line 3)",
        ])
    }

    @Test func ndjsonProblemsPointAtTheKey() {
        let ndjson = "{\"url\": \"https://h.example/a\", \"size\": true}\n"
            + "[1, 2]\n"
            + "{\"urll\": \"https://h.example/b\"}\n"
            + "{\"url\": \"https://h.example/c\", \"mirrors\": [\"https://m.example/c\", 7]}\n"
        #expect(problems("version: 1\njobs_from: [l.ndjson]\n", files: ["l.ndjson": ndjson]) == [
            "l.ndjson:1:40: 'size' must be a number of bytes, found true or false",
            "l.ndjson:2:1: this line is not a JSON object (ndjson has one object per line, such as {\"url\": \"https://…\", \"sha256\": \"…\"})",
            "l.ndjson:3:1: this row has no 'url'",
            "l.ndjson:3:10: unknown key 'urll' (did you mean 'url'?); keys are url, id, dest, size, checksum, sha256, sha512, sha1, "
                + "md5, mirrors (others are ignored)",
            "l.ndjson:4:43: 'mirrors' holds URLs as strings, found a number",
        ])
    }

    @Test func aRowSpanningTheReadChunkIsReadWhole() throws {
        // The quoted field holding a line break starts just before the first chunk ends.
        var csv = "url,id,caption\n"
        var count = 0
        while csv.utf8.count < ListReader.chunkSize - 30 {
            count += 1
            csv += "https://h.example/f/\(count),r\(count),\n"
        }
        csv += "https://h.example/last,last,\"split\nacross\"\nhttps://h.example/after,after,\n"
        let manifest = try load("version: 1\njobs_from: [big.csv]\n", files: ["big.csv": csv])
        #expect(manifest.jobs.count == count + 2)
        #expect(manifest.jobs[count].id == "last")
        #expect(manifest.jobs[count + 1].id == "after")
        #expect(manifest.jobs[count + 1].source.job.line == count + 4)
    }

    @Test func aListIsEnoughWithoutJobsAndAnEmptyOneIsAProblem() throws {
        #expect(try load("version: 1\njobs_from: [u.txt]\n", files: ["u.txt": "https://h.example/a\n"]).jobs.count == 1)
        #expect(problems("version: 1\njobs_from: [u.csv]\n", files: ["u.csv": ""]) == [
            "u.csv:1:1: the list is empty; a csv list starts with a header row naming its columns ('url' at least)",
        ])
        #expect(problems("version: 1\n", files: [:]) == [
            "m.yaml:1:1: missing required key 'jobs' (a list of jobs, or 'jobs_from' naming lists of them)",
        ])
    }
}
