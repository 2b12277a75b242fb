import BatchFetchSpec
import Foundation
import Testing

/// argument-parser's `generate-manual`, beside the binary when it was built.
private enum ManualTool {
    static var url: URL { BinaryRunner.binary.deletingLastPathComponent().appendingPathComponent("generate-manual") }
}

/// `make install`'s script into a temporary DESTDIR: the binary runs from where it landed, `man
/// -l` renders its pages, bash loads its completion, and a second install writes the same bytes.
/// (`.ci/run` also runs `make install` itself on its fresh clone.)
///
/// It needs argument-parser's `generate-manual` beside the binary, which `make test` builds; a
/// plain `swift test` skips the suite saying so, unless `BATCHFETCH_REQUIRE_NGINX=1` (CI) asks
/// for every suite to run.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: ManualTool.url.path) || NginxServer.required,
                "needs generate-manual: swift build --product generate-manual (make test builds it)"))
struct InstallTests {

    private func shell(_ command: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await BinaryRunner.tool([command] + arguments, environment: ["MANWIDTH": "100"].merging(environment) { _, new in new })
    }

    private func install(into destination: TemporaryDirectory) async throws -> URL {
        let tool = ManualTool.url
        #expect(FileManager.default.isExecutableFile(atPath: tool.path), "make test builds generate-manual beside the binary")
        let (status, output) = try await shell("scripts/install.sh", ["--binary", BinaryRunner.binary.path, "--generate-manual", tool.path],
                                         environment: ["DESTDIR": destination.url.path, "PREFIX": "/opt/bf"])
        #expect(status == 0, "\(output)")
        return destination.url.appendingPathComponent("opt/bf")
    }

    @Test func installsTheBinaryCompletionsAndManPages() async throws {
        let destination = try TemporaryDirectory()
        let root = try await install(into: destination)
        let installed = root.appendingPathComponent("bin/batchfetch")
        let version = try await shell(installed.path, ["--version"])
        #expect(version.status == 0 && version.output.trimmingCharacters(in: .whitespacesAndNewlines) == ToolVersion.current)

        let pages = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("share/man/man1").path)
        #expect(pages.contains("batchfetch.1") && pages.contains("batchfetch.run.1") && pages.contains("batchfetch.check.1"), "\(pages)")
        let page = try await shell("man", ["-l", root.appendingPathComponent("share/man/man1/batchfetch.run.1").path])
        #expect(page.status == 0, "\(page.output)")
        #expect(page.output.contains("--metrics") && page.output.contains("If-Range"), "\(page.output)")
        let top = try await shell("man", ["-l", root.appendingPathComponent("share/man/man1/batchfetch.1").path])
        #expect(top.output.contains("batchfetch") && top.output.contains("Exit codes"), "\(top.output)")

        let bash = root.appendingPathComponent("share/bash-completion/completions/batchfetch").path
        let loaded = try await shell("bash", ["-c", "source \"$0\" && complete -p batchfetch", bash])
        #expect(loaded.status == 0 && loaded.output.contains("batchfetch"), "\(loaded.output)")
        for file in ["share/zsh/site-functions/_batchfetch", "share/fish/vendor_completions.d/batchfetch.fish"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(text.contains("batchfetch") && text.contains("metrics"), "\(file)")
        }

        // A second install of the same commit writes the same bytes (the pages carry the commit's date).
        let again = try TemporaryDirectory()
        let second = try await install(into: again)
        for file in ["share/man/man1/batchfetch.run.1", "share/bash-completion/completions/batchfetch", "bin/batchfetch"] {
            #expect(try Data(contentsOf: root.appendingPathComponent(file)) == Data(contentsOf: second.appendingPathComponent(file)), "\(file)")
        }
    }

    @Test func aMissingToolInstallsNothing() async throws {
        let destination = try TemporaryDirectory()
        let (status, output) = try await shell("scripts/install.sh", ["--binary", BinaryRunner.binary.path, "--generate-manual", "/nonexistent/generate-manual"],
                                         environment: ["DESTDIR": destination.url.path])
        #expect(status != 0)
        #expect(output.contains("/nonexistent/generate-manual is missing"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination.url.path).isEmpty)
    }
}
