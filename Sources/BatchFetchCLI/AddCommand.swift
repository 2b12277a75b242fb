import ArgumentParser
import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// `batchfetch add`: appends jobs to a manifest as text (Docs/Import.md).
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Append jobs for URLs to a manifest, keeping every other line as it was.",
        usage: "batchfetch add [<options>] <manifest> <urls> ...",
        discussion: HelpText.reflowed("""
            Each URL becomes a job at the end of the manifest's jobs: list, written in the style
            of the jobs already there (block or flow, the same indentation and line ends); every
            other byte of the file, comments and anchors included, stays as it was. The id comes
            from the URL's last segment (made unique) unless --id gives it; the dest too unless
            --dest does. A dest (or an --id) that another job already has is refused (exit 2).
            The result is validated before it replaces the file, atomically.

            --pin first downloads each new URL into output_dir (verified and published as by
            `run`) and writes its size and sha256 into the new job; if a download fails, the
            manifest is left as it was (exit 1).

            Examples:
              batchfetch add datasets.yaml https://example.org/data/train.tar.gz
              batchfetch add datasets.yaml https://example.org/v2/labels.csv --id labels --dest meta/labels.csv --pin
            """)
    )

    @OptionGroup var manifest: ManifestArgument

    @Argument(help: "URLs to add (http, https, s3 or gs).")
    var urls: [String]

    @Option(help: "The new job's id (one URL only).")
    var id: String?

    @Option(help: "The new job's dest, relative to output_dir (one URL only).")
    var dest: String?

    @Flag(help: "Download the new files and write their size and sha256 into the new jobs.")
    var pin = false

    @OptionGroup var transportOption: TransportOption
    @OptionGroup var cacheOption: CacheOption

    func validate() throws {
        if urls.isEmpty { throw ValidationError("name at least one URL to add") }
        if urls.count > 1 && (id != nil || dest != nil) { throw ValidationError("--id and --dest name one job: give one URL with them") }
    }

    func run() async throws {
        // Read once: the manifest checked is the text edited.
        let path = URL(fileURLWithPath: manifest.manifest).resolvingSymlinksInPath().path
        guard let bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
            throw CommandFailure(.invalid, "batchfetch: error: cannot read manifest '\(manifest.manifest)'")
        }
        let existing: Manifest
        do {
            existing = try ManifestLoader().load(bytes: bytes, displayPath: manifest.manifest,
                                                 baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        } catch {
            DiagnosticPrinter.print(error)
            throw CommandFailure(.invalid)
        }
        guard let layout = JobsLayout.find(in: bytes) else {
            throw CommandFailure(.invalid, "batchfetch: error: cannot find where the jobs of \(manifest.manifest) end")
        }
        let appended = { (jobs: [(job: ImportedJob, id: String)]) -> String in
            var names = ImportNames()
            return String(decoding: ManifestAppend.appending(jobs.map { ($0.job, $0.id) }, to: bytes, layout: layout, names: &names),
                          as: UTF8.self)
        }
        var jobs = try named(existing)
        if pin {
            // Fetched as jobs of the manifest itself: its defaults, headers, s3 settings and cache apply.
            jobs = try await pinned(jobs, in: try ManifestEdit.validate(appended(jobs), as: path))
        }
        let text = appended(jobs)
        try ManifestEdit.validate(text, as: path)
        // Someone else's edit meanwhile (an editor, a second add, a --pin's long download) is not overwritten.
        guard FileManager.default.contents(atPath: path).map(Array.init) == bytes else {
            throw CommandFailure(.jobsFailed, "batchfetch: error: \(manifest.manifest) changed while batchfetch add ran; nothing written (run it again)")
        }
        try ManifestEdit.write(text, to: path)
        for (job, id) in jobs { Console.error("added \(id) -> \(job.dest ?? "")  \(job.urls[0])") }
    }

    /// The new jobs with their ids and dests settled: derived ones made unique, given or derived
    /// dests and given ids refused when another job has them.
    private func named(_ existing: Manifest) throws -> [(job: ImportedJob, id: String)] {
        var names = ImportNames(takenIDs: existing.jobs.map(\.id), takenDests: existing.jobs.map(\.dest.redacted))
        let owner = Dictionary(existing.jobs.map { ($0.dest.redacted, $0.id) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        var jobs: [(job: ImportedJob, id: String)] = []
        for url in urls {
            if let problem = ImportLines.urlProblem(url) {
                problems.append(problem)
                continue
            }
            let wanted = dest ?? ImportNames.fileName(ofURL: url)
            if names.isTaken(dest: wanted) {
                problems.append("dest '\(wanted)' is already " + (owner[wanted].map { "job '\($0)''s" } ?? "taken by a URL given before"))
                continue
            }
            if let id, names.isTaken(id: id) {
                problems.append("a job '\(id)' exists already")
                continue
            }
            var job = ImportedJob(urls: [url], dest: wanted, origin: "added by batchfetch add")
            let settled = names.named(job, id: id)
            job.dest = settled.dest
            jobs.append((job, settled.id))
        }
        guard problems.isEmpty else {
            for problem in problems { Console.error("batchfetch: error: \(problem)") }
            throw CommandFailure(.invalid, "batchfetch: error: \(manifest.manifest) was not changed")
        }
        return jobs
    }

    /// The jobs with the size and sha256 of their files, downloaded into output_dir as `run`
    /// would: `appended` is the manifest with them added, run for them alone.
    private func pinned(_ jobs: [(job: ImportedJob, id: String)], in appended: Manifest) async throws -> [(job: ImportedJob, id: String)] {
        guard case .success(let manifest) = appended.selecting(jobs.map(\.id)) else { throw CommandFailure(.invalid) }
        var options = RunOptions()
        options.transportKind = transportOption.kind
        options.cache = cacheOption.directory(for: manifest)
        let report = try await CommandRun.holdingLock(manifest.outputDirectory) {
            let run = Runner(manifest: manifest, options: options).start()
            await CommandRun.follow(run)
            return await run.report
        }
        let results = Dictionary(report.jobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return try jobs.map { job, id in
            guard let result = results[id], result.status.succeeded, let sha256 = result.checksums?["sha256"],
                  case .success(let checksum) = Checksum.parse("sha256:\(sha256)") else {
                throw CommandFailure(.jobsFailed, "batchfetch: error: \(id) could not be fetched; \(manifest.path) was not changed")
            }
            var job = job
            job.size = result.size
            job.checksums = [checksum]
            return (job, id)
        }
    }
}
