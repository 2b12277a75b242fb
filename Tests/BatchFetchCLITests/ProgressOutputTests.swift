@testable import BatchFetchCLI
import BatchFetchEngine
import Foundation
import Testing
import TestOrigin

/// Progress on stderr: the exact lines of `line` mode (logs), the redrawn area of `bar` mode, and
/// which one the binary picks for a pipe and for a terminal.
@Suite struct ProgressOutputTests {
    static func progress(elapsed: Double, finished: Int, active: [RunProgress.Active], transferred: Int64) -> RunProgress {
        RunProgress(elapsed: elapsed, jobs: 4, finished: finished, active: active, transferred: transferred)
    }

    static let train = RunProgress.Active(id: "train", bytes: 300 << 20, total: 1 << 30, transferred: 200 << 20, elapsed: 10)

    static func finished(_ id: String, size: Int64, seconds: Double) -> JobResult {
        var result = JobResult(id: id, status: .downloaded, dest: "\(id).bin")
        result.size = size
        result.bytesTransferred = size
        result.duration = seconds
        return result
    }

    @Test func lineModePrintsFinishedJobsAndASummaryEveryTenSeconds() {
        var output = ""
        let printer = ProgressPrinter(mode: .line) { output += $0 }
        printer.handle(.jobStarted(id: "train", dest: "train.bin", url: "http://x/train"))
        printer.handle(.progress(Self.progress(elapsed: 4, finished: 0, active: [Self.train], transferred: 100 << 20)))
        printer.handle(.jobFinished(Self.finished("sums", size: 2048, seconds: 0.5)))
        printer.handle(.progress(Self.progress(elapsed: 10.1, finished: 1, active: [Self.train], transferred: 200 << 20)))
        printer.handle(.progress(Self.progress(elapsed: 12, finished: 1, active: [Self.train], transferred: 250 << 20)))
        printer.handle(.progress(Self.progress(elapsed: 20.2, finished: 1, active: [Self.train], transferred: 404 << 20)))
        printer.finish()
        #expect(output == """
            downloaded  sums -> sums.bin  2.0 KiB in 0.5s (4.0 KiB/s)
            progress: 1 of 4 jobs finished, 1 running; 200.0 MiB received in 10s (19.8 MiB/s)
            progress: 1 of 4 jobs finished, 1 running; 404.0 MiB received in 20s (20.0 MiB/s)

            """)
        #expect(!output.contains("\r") && !output.contains("\u{1B}"))
    }

    /// A job unpacking its archive shows entries and bytes instead of its download, in both
    /// modes; its finished line says what the tree holds.
    @Test func unpackingShowsEntriesAndBytes() {
        var unpacking = Self.train
        unpacking.unpacking = RunProgress.Unpacking(entries: 1234, bytes: 56 << 20)
        let lines = ProgressPrinter.barLines(Self.progress(elapsed: 10, finished: 0, active: [unpacking], transferred: 1 << 30))
        #expect(lines.last == "  train  unpacking  1234 entries  56.0 MiB")
        #expect(ProgressPrinter.summaryLine(Self.progress(elapsed: 10, finished: 0, active: [unpacking], transferred: 1 << 30))
            .hasSuffix("; unpacking train: 1234 entries, 56.0 MiB"))
        var done = Self.finished("train", size: 1 << 30, seconds: 10)
        done.extracted = Extraction(into: "train", format: "tar.gz", files: 1200, bytes: 1 << 30, repaired: nil)
        #expect(JobLine.describe(done).hasSuffix(";  1200 files (1.0 GiB) in train"))
    }

    @Test func barLinesAreCutToTheTerminalWidth() {
        var output = ""
        let printer = ProgressPrinter(mode: .bar, width: { 40 }) { output += $0 }
        printer.handle(.progress(Self.progress(elapsed: 10, finished: 1, active: [Self.train], transferred: 200 << 20)))
        #expect(output.split(separator: "\n").allSatisfy { $0.count <= 39 })
        #expect(output.hasPrefix("[######..................]  25% 1/4 job\n"))
    }

    /// One 1 GiB job half done beside three small ones done: the run's bar says 50% of the bytes
    /// (not 75% of the jobs), with the ETA of the bytes left; while a size is unknown it says so
    /// instead of an ETA.
    @Test func theRunBarCountsBytes() {
        let big = RunProgress.Active(id: "big", bytes: 512 << 20, total: 1 << 30, transferred: 512 << 20, elapsed: 10)
        var progress = RunProgress(elapsed: 10, jobs: 4, finished: 3, active: [big], transferred: 512 << 20,
                                   bytesDone: (512 << 20) + (3 << 10), bytesKnown: (1 << 30) + (3 << 10))
        #expect(ProgressPrinter.barLines(progress).first
            == "[############............]  50% 512.0 MiB/1.0 GiB  3/4 jobs  51.2 MiB/s  ETA 10s")
        progress.unsized = 2
        #expect(ProgressPrinter.barLines(progress).first?.hasSuffix("51.2 MiB/s  +2 of unknown size") == true)

        // The job finishes: until the next snapshot, its bytes count as done.
        var output = ""
        let printer = ProgressPrinter(mode: .bar, width: { 100 }) { output += $0 }
        printer.handle(.progress(progress))
        output = ""
        printer.handle(.jobFinished(Self.finished("big", size: 1 << 30, seconds: 20)))
        printer.finish()
        #expect(output.contains("[########################] 100% 1.0 GiB/1.0 GiB  4/4 jobs"), "\(output)")
    }

    @Test func barModeRedrawsTheRunAndEachJobInPlace() {
        var output = ""
        let printer = ProgressPrinter(mode: .bar, width: { 100 }) { output += $0 }
        printer.handle(.progress(Self.progress(elapsed: 10, finished: 1, active: [Self.train], transferred: 200 << 20)))
        #expect(output == """
            [######..................]  25% 1/4 jobs  200.0 MiB  20.0 MiB/s
              train  [###.........]  29% 300.0 MiB/1.0 GiB  ETA 37s  20.0 MiB/s

            """)
        output = ""
        printer.handle(.jobFinished(Self.finished("train", size: 1 << 30, seconds: 50)))
        printer.finish()
        // Up over the two live lines, clear, the finished job, the run line; then cleared for the summary.
        #expect(output == "\u{1B}[2A\r\u{1B}[J" + "downloaded  train -> train.bin  1.0 GiB in 50.0s (20.5 MiB/s)\n"
            + "[############............]  50% 2/4 jobs  200.0 MiB  20.0 MiB/s\n" + "\u{1B}[1A\r\u{1B}[J")
    }

    /// A cron rerun logs what changed: up-to-date jobs are counted in the summary, not listed,
    /// unless `--verbose`.
    @Test func lineModeCountsUpToDateJobsInsteadOfListingThem() async throws {
        let origin = try await TestOrigin.start()
        for name in ["a", "b", "c"] { origin.serve("/\(name).bin", .text("file \(name)\n")) }
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: a, url: "\(origin.url("/a.bin"))"}
              - {id: b, url: "\(origin.url("/b.bin"))"}
              - {id: c, url: "\(origin.url("/c.bin"))"}
            """)
        let first = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url)
        #expect(first.stderr.components(separatedBy: "downloaded  ").count - 1 == 3)
        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("data/b.bin"))
        let rerun = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line"], in: directory.url)
        let lines = rerun.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("downloaded  b -> b.bin") == true)
        #expect(lines.last?.hasPrefix("succeeded: 1 downloaded, 2 up to date, 0 failed, 0 skipped") == true)
        let verbose = try await BinaryRunner.run(["run", "m.yaml", "--progress", "line", "--verbose"], in: directory.url)
        try await origin.shutdown()
        #expect(verbose.stderr.split(separator: "\n").filter { $0.hasPrefix("up to date") }.count == 3, "\(verbose.stderr)")
    }

    @Test func aPipeGetsPlainLinesAndATerminalGetsBars() async throws {
        let origin = try await TestOrigin.start()
        var file = OriginFile.generated(size: 4 << 20, seed: 41)
        file.trickleBytesPerSecond = 8 << 20
        origin.serve("/f.bin", file)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: f, url: "\(origin.url("/f.bin"))"}
            """)
        let piped = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        #expect(piped.status == 0)
        #expect(!piped.stderr.contains("\r") && !piped.stderr.contains("\u{1B}"))
        let lines = piped.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty)
        #expect(lines[0].range(of: #"^downloaded  f -> f\.bin  4\.0 MiB in \d+\.\ds \(\d+\.\d [KM]iB/s\)$"#, options: .regularExpression) != nil)
        #expect(lines[1].hasPrefix("succeeded: 1 downloaded, 0 up to date, 0 failed, 0 skipped; 4.0 MiB transferred in "))

        try FileManager.default.removeItem(at: directory.url.appendingPathComponent("data"))
        let terminal = try await BinaryRunner.runInTerminal(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()
        #expect(terminal.status == 0)
        #expect(terminal.output.contains("\u{1B}[J"))
        #expect(terminal.output.contains("0/1 jobs"))
        // The manifest gives no size: the run's bar takes it from the response.
        #expect(terminal.output.contains("/4.0 MiB  0/1 jobs"), "\(terminal.output)")
        #expect(terminal.output.contains("  f  ") && terminal.output.contains("4.0 MiB"))
        #expect(terminal.output.contains("downloaded  f -> f.bin  4.0 MiB"))
    }
}
