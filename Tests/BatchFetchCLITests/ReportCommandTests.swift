import Foundation
import Testing
import TestOrigin

/// `batchfetch report` on a real run's report: text and Markdown say what failed and why; the
/// HTML page loads in a real headless browser (Chromium) with no console message, draws its
/// timeline bars in the outcomes' colours, and loads nothing from the network.
@Suite(.serialized) struct ReportCommandTests {
    /// A run of three files (one large, so the timeline has a long bar) and one that is gone.
    private func finishedRun() async throws -> TemporaryDirectory {
        let origin = try await TestOrigin.start()
        origin.serve("/a.bin", .generated(size: 10_000, seed: 1))
        origin.serve("/b.bin", .generated(size: 20_000, seed: 2))
        var large = OriginFile.generated(size: 8 << 20, seed: 3)
        large.trickleBytesPerSecond = 32 << 20
        origin.serve("/large.bin", large)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            defaults: {retries: 0}
            jobs:
              - {id: a, url: "\(origin.url("/a.bin"))"}
              - {id: b, url: "\(origin.url("/b.bin"))"}
              - {id: large, url: "\(origin.url("/large.bin"))", segments: 1}
              - {id: gone, url: "\(origin.url("/gone.bin?x=<script>|"))"}
              - {id: after-gone, url: "\(origin.url("/a.bin"))", dest: again.bin, depends_on: [gone]}
            """)
        let run = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(run.status == 1, "\(run.stderr)")
        return directory
    }

    /// Tests/Support/html_check.py on a page: what it logged and its pixels of `colours`.
    private func browse(_ page: URL, colours: [String]) async throws -> [String: Any] {
        let (status, output) = try await BinaryRunner.tool(["python3", "Tests/Support/html_check.py", page.path, "--colours", colours.joined(separator: ",")])
        #expect(status == 0, "\(output)")
        // The JSON is the script's one line on stdout (anything on stderr comes after it).
        let data = Data((output.split(separator: "\n").first { $0.hasPrefix("{") } ?? "").utf8)
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    @Test func textAndMarkdownSayWhatFailedAndWhy() async throws {
        let directory = try await finishedRun()
        let text = try await BinaryRunner.run(["report", "data/batchfetch-report.json"], in: directory.url)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("batchfetch run: failed\n"))
        #expect(text.stdout.contains("5 jobs: 3 downloaded, 1 failed, 1 skipped"), "\(text.stdout)")
        #expect(text.stdout.contains("  gone  failed  http_status: HTTP 404"))
        #expect(text.stdout.contains("  after-gone  skipped  dependency 'gone' failed"))

        let markdown = try await BinaryRunner.run(["report", "data/batchfetch-report.json", "--format", "markdown"], in: directory.url)
        #expect(markdown.status == 0)
        let lines = markdown.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "## ❌ batchfetch run: failed")
        #expect(lines.contains("| jobs | downloaded | failed | skipped |"))
        #expect(lines.contains("| 5 | 3 | 1 | 1 |"))
        let failure = try #require(lines.first { $0.hasPrefix("| `gone` |") })
        // The URL's `<script>` and `|` are escaped: the row keeps its four cells.
        #expect(failure.contains(#"\<script\>\|"#), "\(failure)")
        #expect(failure.replacingOccurrences(of: #"\|"#, with: "").filter { $0 == "|" }.count == 5, "\(failure)")
        #expect(lines.contains("### Slowest jobs"))
        #expect(lines.contains { $0.hasPrefix("| `large` | downloaded |") })
    }

    @Test func theHTMLPageLoadsInABrowserAndDrawsTheTimeline() async throws {
        let directory = try await finishedRun()
        let page = directory.url.appendingPathComponent("out/report.html")
        let written = try await BinaryRunner.run(["report", "data/batchfetch-report.json", "--format", "html", "-o", "out/report.html"],
                                           in: directory.url)
        #expect(written.status == 0 && written.stdout.isEmpty, "\(written.stderr)")
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(html.contains("&lt;script&gt;") && !html.contains("x=<script>"), "report strings are escaped")
        #expect(!html.contains("src=\"http") && !html.contains("href=\"http"), "nothing to load from a network")
        // One bar per job that ran (the skipped one never started).
        #expect(html.components(separatedBy: "<rect class=\"bar ").count - 1 == 4)

        let green = "2e7d32", red = "c62828", throughput = "90caf9"
        let seen = try await browse(page, colours: [green, red, throughput])
        #expect((seen["console"] as? [String])?.isEmpty == true, "console: \(seen["console"] ?? "")")
        #expect(seen["screenshot"] as? Bool == true)
        let pixels = seen["pixels"] as? [String: Int] ?? [:]
        #expect((pixels[green] ?? 0) > 200, "downloaded bars (and the badge) are drawn: \(pixels)")
        #expect((pixels[red] ?? 0) > 50, "the failed job's bar and the badge are drawn: \(pixels)")
        #expect((pixels[throughput] ?? 0) > 500, "the throughput area is drawn: \(pixels)")

        // The checker itself sees a console error and a blocked load: it cannot pass a broken page.
        let broken = directory.url.appendingPathComponent("out/broken.html")
        try Data((html.replacingOccurrences(of: "</body>", with: "<img src=\"http://127.0.0.1:9/x.png\"><script>undefinedName();</script></body>")).utf8)
            .write(to: broken)
        let console = try await browse(broken, colours: []) ["console"] as? [String] ?? []
        #expect(console.contains { $0.contains("undefinedName") }, "\(console)")
        #expect(console.contains { $0.contains("Content Security Policy") || $0.contains("Refused to load") }, "\(console)")
    }
}
