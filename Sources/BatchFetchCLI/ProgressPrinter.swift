import BatchFetchEngine
import Foundation

/// Progress on stderr (`--progress`). `bar`, for a terminal: a whole-run bar and one line per
/// job in flight, redrawn in place at most 10 times a second, with finished jobs scrolling above.
/// `line`, for logs: one line per job that changed something (downloaded, failed, skipped,
/// interrupted) and a summary line every 10 seconds, never a carriage return or escape sequence;
/// jobs already up to date are only counted in the final summary, so a nightly rerun of 5,000
/// files logs what changed, not 5,000 lines (`listsUpToDate`, `run --verbose`, lists them too).
/// `none`: nothing until the final summary.
final class ProgressPrinter {
    enum Mode: String, CaseIterable {
        case bar, line, none
    }

    private let mode: Mode
    /// In `line` mode, also a line for each job that was already up to date.
    private let listsUpToDate: Bool
    private let write: (String) -> Void
    private let summaryInterval: Double
    /// Columns of the terminal, asked on every redraw (it may be resized).
    private let width: () -> Int
    private var nextSummary: Double
    private var liveLines = 0
    private var lastDraw = -1.0
    private var latest: RunProgress?
    private var pending: [String] = []

    init(mode: Mode, listsUpToDate: Bool = false, summaryInterval: Double = 10,
         width: @escaping () -> Int = ProgressPrinter.terminalWidth, write: @escaping (String) -> Void) {
        self.mode = mode
        self.listsUpToDate = listsUpToDate
        self.width = width
        self.summaryInterval = summaryInterval
        nextSummary = summaryInterval
        self.write = write
    }

    func handle(_ event: RunEvent) {
        switch (mode, event) {
        case (_, .warning(let message)):
            // Printed whatever the mode: a quiet cron log still shows what it costs.
            write("warning: \(message)\n")
        case (.none, _), (_, .jobStarted), (_, .runFinished):
            return
        case (.line, .jobFinished(let job)):
            if job.status == .upToDate && !listsUpToDate { return }
            write(JobLine.describe(job) + "\n")
        case (.line, .progress(let progress)):
            guard progress.elapsed >= nextSummary else { return }
            nextSummary = (progress.elapsed / summaryInterval).rounded(.down) * summaryInterval + summaryInterval
            write(Self.summaryLine(progress) + "\n")
        case (.bar, .jobFinished(let job)):
            pending.append(JobLine.describe(job))
            latest?.finish(job)
            draw(force: false)
        case (.bar, .progress(let progress)):
            latest = progress
            draw(force: false)
        }
    }

    /// Clears the live area for the final summary line.
    func finish() {
        guard mode == .bar else { return }
        draw(force: true)
        if liveLines > 0 { write("\u{1B}[\(liveLines)A\r\u{1B}[J") }
        liveLines = 0
    }

    /// The width of the terminal on stderr, 80 when unknown.
    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `line` mode's periodic summary.
    static func summaryLine(_ progress: RunProgress) -> String {
        let rate = progress.elapsed > 0 ? Double(progress.transferred) / progress.elapsed : 0
        let unpacking = progress.active.compactMap { job in
            job.unpacking.map { "; unpacking \(job.id): \($0.entries) entries, \(ByteFormat.bytes($0.bytes))" }
        }
        return "progress: \(progress.finished) of \(progress.jobs) jobs finished, \(progress.active.count) running; "
            + "\(ByteFormat.bytes(progress.transferred)) received in \(Int(progress.elapsed.rounded()))s "
            + "(\(ByteFormat.bytes(Int64(rate)))/s)" + unpacking.joined()
    }

    /// `bar` mode's live area: the run, then each job in flight.
    ///
    /// The run's bar counts bytes done against bytes known (``RunProgress/bytesKnown``) and its
    /// ETA comes from the bytes left at the run's rate: a run of one 1 GiB job and three small
    /// ones is not 75% done when the small ones are. Only when no size is known at all does it
    /// count jobs.
    static func barLines(_ progress: RunProgress, width: Int = 24) -> [String] {
        let rate = progress.elapsed > 0 ? Double(progress.transferred) / progress.elapsed : 0
        let jobs = "\(progress.finished)/\(progress.jobs) jobs"
        var run: String
        if progress.bytesKnown > 0 {
            run = "\(bar(Double(progress.bytesDone) / Double(progress.bytesKnown), width: width)) "
                + "\(ByteFormat.bytes(progress.bytesDone))/\(ByteFormat.bytes(progress.bytesKnown))  \(jobs)  \(ByteFormat.bytes(Int64(rate)))/s"
            if progress.unsized > 0 {
                run += "  +\(progress.unsized) of unknown size"
            } else if rate > 0 {
                run += "  ETA \(duration(Double(max(0, progress.bytesKnown - progress.bytesDone)) / rate))"
            }
        } else {
            run = "\(bar(Double(progress.finished) / Double(max(1, progress.jobs)), width: width)) "
                + "\(jobs)  \(ByteFormat.bytes(progress.transferred))  \(ByteFormat.bytes(Int64(rate)))/s"
        }
        var lines = [run]
        for job in progress.active {
            let jobRate = job.elapsed > 0 ? Double(job.transferred) / job.elapsed : 0
            var line = "  \(job.id)  "
            if let unpacking = job.unpacking {
                lines.append(line + "unpacking  \(unpacking.entries) entries  \(ByteFormat.bytes(unpacking.bytes))")
                continue
            }
            if let total = job.total, total > 0 {
                line += "\(bar(Double(job.bytes) / Double(total), width: width / 2)) "
                    + "\(ByteFormat.bytes(job.bytes))/\(ByteFormat.bytes(total))"
                if jobRate > 0 { line += "  ETA \(duration(Double(total - job.bytes) / jobRate))" }
            } else {
                line += ByteFormat.bytes(job.bytes)
            }
            lines.append(line + "  \(ByteFormat.bytes(Int64(jobRate)))/s")
        }
        return lines
    }

    static func bar(_ fraction: Double, width: Int) -> String {
        let filled = Int((min(1, max(0, fraction)) * Double(width)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + String(format: "%3d%%", Int((min(1, max(0, fraction)) * 100).rounded(.down)))
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole >= 3600 ? "\(whole / 3600)h\(whole % 3600 / 60)m" : whole >= 60 ? "\(whole / 60)m\(whole % 60)s" : "\(whole)s"
    }

    /// Redraws: moves up over the old live area, prints finished jobs, then the new live area.
    private func draw(force: Bool) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        guard force || now - lastDraw >= 0.1 else { return }
        lastDraw = now
        var text = liveLines > 0 ? "\u{1B}[\(liveLines)A\r\u{1B}[J" : ""
        for line in pending { text += line + "\n" }
        pending = []
        // A live line wider than the terminal would wrap, and moving up would then miss it.
        let live = (latest.map { Self.barLines($0) } ?? []).map { String($0.prefix(max(20, width() - 1))) }
        for line in live { text += line + "\n" }
        liveLines = live.count
        write(text)
    }
}
