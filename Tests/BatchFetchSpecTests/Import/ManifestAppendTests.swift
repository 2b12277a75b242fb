@testable import BatchFetchSpec
import Foundation
import Testing

/// `batchfetch add`'s text edit: the new job lands at the end of `jobs:` in the style of the
/// jobs there, every byte of the original stays (the result minus the inserted text is the
/// original), and the result loads with the new job last.
@Suite struct ManifestAppendTests {
    private func append(_ original: String, url: String = "http://h/new/file.bin", id: String? = nil) throws -> (text: String, manifest: Manifest) {
        let bytes = Array(original.utf8)
        let layout = try #require(JobsLayout.find(in: bytes), "no layout for:\n\(original)")
        var names = ImportNames()
        let job = ImportedJob(urls: [url], dest: ImportNames.fileName(ofURL: url), origin: "added by test")
        let result = ManifestAppend.appending([(job, id)], to: bytes, layout: layout, names: &names)
        let text = String(decoding: result, as: UTF8.self)
        // Every original byte is kept, in order: removing one contiguous insertion gives the original back.
        let prefix = zip(result, bytes).prefix { $0 == $1 }.count
        let suffix = zip(result.reversed(), bytes.reversed()).prefix { $0 == $1 }.count
        #expect(prefix + suffix >= bytes.count, "the original bytes were changed:\n\(text)")
        let manifest = try ManifestLoader(environment: [:]).load(bytes: result, displayPath: "m.yaml", baseDirectory: "/tmp")
        #expect(manifest.jobs.last?.urls.first?.resolved == url)
        return (text, manifest)
    }

    @Test func blockJobsWithCommentsAndKeysAfter() throws {
        let original = """
            # datasets
            version: 1
            jobs:
              - id: a   # first
                url: http://h/a.bin
                headers:
                  X-Token: "t"
              # a comment between jobs
              - id: b
                url: http://h/b.bin
                note: |
                  kept
                  as is
            # trailing comment
            defaults: {retries: 2}

            """.replacingOccurrences(of: "    note: |\n      kept\n      as is\n", with: "")
        let (text, manifest) = try append(original)
        #expect(manifest.jobs.map(\.id) == ["a", "b", "file.bin"])
        #expect(text.contains("    url: http://h/b.bin\n  # added by test\n  - id: \"file.bin\"\n    url: \"http://h/new/file.bin\"\n"), "\(text)")
        #expect(text.hasSuffix("# trailing comment\ndefaults: {retries: 2}\n"))
    }

    @Test func flowItemsStayFlowAndFlowSequencesGrow() throws {
        let items = "version: 1\njobs:\n  - {id: a, url: \"http://h/a\"}\n  - {id: b, url: \"http://h/b\"}   # b\n"
        let (text, _) = try append(items)
        #expect(text.hasSuffix("# b\n  # added by test\n  - {id: \"file.bin\", url: \"http://h/new/file.bin\", dest: \"file.bin\"}\n"), "\(text)")

        let flow = "version: 1\njobs: [{id: a, url: \"http://h/a\"},\n  {id: b, url: \"http://h/b\"} ]  # end\n"
        let (grown, manifest) = try append(flow)
        #expect(manifest.jobs.count == 3)
        #expect(grown.contains("{id: b, url: \"http://h/b\"}, {id: \"file.bin\""), "\(grown)")
        #expect(grown.hasSuffix("dest: \"file.bin\"} ]  # end\n"), "\(grown)")

        let (fromEmpty, one) = try append("version: 1\njobs: []\n")
        #expect(one.jobs.count == 1 && fromEmpty.contains("jobs: [{id: \"file.bin\""))
        let (trailingComma, _) = try append("version: 1\njobs: [{id: a, url: \"http://h/a\"},]\n")
        #expect(!trailingComma.contains(",,") && !trailingComma.contains(", , "))
    }

    @Test func anchorsCRLFIndentlessAndNoFinalNewline() throws {
        let anchors = "version: 1\ndefaults: &common {retries: 1}\njobs:\n- id: a\n  url: http://h/a\n  <<: *common\n- &b\n  id: b\n  url: http://h/b"
        let (text, manifest) = try append(anchors)
        #expect(text.hasSuffix("  url: http://h/b\n# added by test\n- id: \"file.bin\"\n  url: \"http://h/new/file.bin\"\n  dest: \"file.bin\"\n"), "\(text)")
        #expect(manifest.jobs.count == 3)

        let crlf = "version: 1\r\njobs:\r\n  - id: a\r\n    url: http://h/a\r\n"
        let (windows, _) = try append(crlf)
        #expect(windows.replacingOccurrences(of: "\r\n", with: "").contains("\n") == false, "every line ends with CRLF:\n\(windows.debugDescription)")

        let unicode = "version: 1\njobs:\n  - id: e\n    url: \"http://h/ü/é.bin\"   # ünïcode\n"
        let (after, _) = try append(unicode)
        #expect(after.hasSuffix("# ünïcode\n  # added by test\n  - id: \"file.bin\"\n    url: \"http://h/new/file.bin\"\n    dest: \"file.bin\"\n"), "\(after)")
    }

    @Test func aManifestWithOnlyAListGetsAJobsBlock() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("append-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "url\nhttp://h/listed.bin\n".write(to: directory.appendingPathComponent("l.csv"), atomically: true, encoding: .utf8)
        let bytes = Array("version: 1\njobs_from: [{file: l.csv}]\n".utf8)
        let layout = try #require(JobsLayout.find(in: bytes))
        #expect(layout.shape == .absent)
        var names = ImportNames()
        let result = ManifestAppend.appending([(ImportedJob(urls: ["http://h/new.bin"], origin: "o"), nil)], to: bytes, layout: layout, names: &names)
        let manifest = try ManifestLoader(environment: [:]).load(bytes: result, displayPath: "m.yaml", baseDirectory: directory.path)
        #expect(manifest.jobs.map(\.id).sorted() == ["listed.bin", "new.bin"])
    }
}
