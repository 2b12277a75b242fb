import ArgumentParser
import BatchFetchEngine
import BatchFetchSpec
import Foundation

/// `batchfetch import`: a manifest from what users already have (Docs/Import.md).
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Make a manifest from a URL list, a wget or aria2 input file, a Metalink, a SHA256SUMS or a CSV.",
        usage: "batchfetch import [<options>] <files> ...",
        discussion: HelpText.reflowed("""
            Each file's format is found from its name and first lines unless --format says it:
            urls (one URL per line), wget (a `wget -i` list), aria2 (an `aria2c -i` file: mirrors
            tab-separated on one line, then indented out=, dir=, checksum=sha-256=..., split=),
            metalink (Metalink 4: mirrors by priority, size, hashes), sha256sums (SHA256SUMS or
            SHA512SUMS, GNU or BSD lines, with --base-url where the files are) or csv (as
            jobs_from reads it: url, dest, size, sha256... columns).

            Ids and dests come from the file, else from the URL's last segment, made unique; a
            comment above each job says which line it came from. The manifest is validated
            before it is written. A line that is not understood is reported as file:line and
            nothing is written (exit 2), unless --skip-invalid leaves such lines out.

            Without -o the manifest goes to stdout. --pin (with -o) then fetches every file and
            writes the lockfile, as `batchfetch pin` does.

            A signed SHA256SUMS is verified before anything is written: a clear-signed one with
            --keyring (a binary OpenPGP keyring, checked by gpgv), one with a detached FILE.minisig
            beside it with --minisign-key. The manifest then has a job for the SUMS file with its
            signature: and checksums_from: on the others, so every run checks the signature again
            (Docs/Signatures.md). A signature that does not verify writes nothing (exit 2); a
            signed file imported without a key is imported with a warning that its signature was
            not checked.

            Examples:
              batchfetch import urls.txt -o datasets.yaml
              batchfetch import SHA256SUMS --base-url https://example.org/release/ -o release.yaml --pin
              batchfetch import SHA256SUMS --base-url https://cdimage.debian.org/.../ --keyring debian-keyring.gpg
              batchfetch import files.meta4 --output-dir data -o datasets.yaml
              batchfetch import downloads.txt --format aria2 -o datasets.yaml
            """)
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case auto, urls, wget, aria2, metalink, sha256sums, csv
    }

    @Argument(help: "Files to import (all into one manifest).", completion: .file())
    var files: [String]

    @Option(help: "auto (from each file's name and first lines), urls, wget, aria2, metalink, sha256sums or csv.",
            completion: .list(Format.allCases.map(\.rawValue)))
    var format: Format = .auto

    @Option(name: .customLong("base-url"), help: "Where the files of a SHA256SUMS are (the URL of its directory).")
    var baseURL: String?

    @Option(name: .customLong("output-dir"), help: "The manifest's output_dir (relative to the manifest).")
    var outputDirectory: String?

    @Option(name: [.short, .customLong("output")], help: "Write the manifest here (atomically) instead of stdout.",
            completion: .file(extensions: ["yaml", "yml"]))
    var output: String?

    @Flag(help: "Replace the -o file if it exists.")
    var force = false

    @Option(help: "Verify a clear-signed SHA256SUMS with this OpenPGP keyring (gpgv) and keep its signature in the manifest.",
            completion: .file())
    var keyring: String?

    @Option(name: .customLong("minisign-key"), help: "Verify a SHA256SUMS with the minisign public key in this file (FILE.minisig beside it) and keep its signature in the manifest.",
            completion: .file(extensions: ["pub"]))
    var minisignKey: String?

    @Flag(name: .customLong("skip-invalid"), help: "Leave out lines that are not understood (each still reported) instead of writing nothing.")
    var skipInvalid = false

    @Flag(help: "After writing the manifest (-o), fetch every file and write its lockfile, as `batchfetch pin`.")
    var pin = false

    func validate() throws {
        if pin && output == nil { throw ValidationError("--pin needs -o: the lockfile is written beside the manifest") }
        if files.isEmpty { throw ValidationError("name at least one file to import") }
        if keyring != nil && minisignKey != nil { throw ValidationError("give --keyring or --minisign-key, not both") }
    }

    func run() async throws {
        var jobs: [ImportedJob] = []
        var problems: [ImportProblem] = []
        for file in files {
            let result = try await read(file)
            jobs += result.jobs
            problems += result.problems
        }
        for problem in problems { Console.error("\(problem)\(skipInvalid ? " (left out)" : "")") }
        if !problems.isEmpty && !skipInvalid {
            throw CommandFailure(.invalid, "import: \(problems.count) line\(problems.count == 1 ? "" : "s") not understood; nothing written (--skip-invalid leaves them out)")
        }
        guard !jobs.isEmpty else {
            throw CommandFailure(.invalid, "batchfetch: error: no jobs in \(files.joined(separator: ", "))")
        }
        var names = ImportNames()
        let text = ManifestText.manifest(jobs: jobs, named: &names, outputDirectory: outputDirectory, sources: files)
        try ManifestEdit.validate(text, as: output)
        guard let output else {
            print(text, terminator: "")
            return
        }
        if !force && FileManager.default.fileExists(atPath: output) {
            throw CommandFailure(.invalid, "batchfetch: error: \(output) exists; choose another -o, or --force to replace it")
        }
        try ManifestEdit.write(text, to: output)
        Console.error("import: \(jobs.count) job\(jobs.count == 1 ? "" : "s") written to \(output)")
        if pin {
            let command = try PinCommand.parse([output])
            try await command.run()
        }
    }

    /// One file's jobs and problems, in its format.
    private func read(_ file: String) async throws -> ImportResult {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure(.invalid, "batchfetch: error: cannot read \(file)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let chosen = format == .auto ? ImportFormat.guess(path: file, text: text) : ImportFormat(rawValue: format.rawValue)!
        switch chosen {
        case .urls, .wget: return URLListImport.read(text, file: file)
        case .aria2: return Aria2InputImport.read(text, file: file)
        case .metalink: return MetalinkImport.read(data, file: file)
        case .sha256sums: return try await sums(file, text: text)
        case .csv: return try csv(file)
        }
    }

    /// A SHA256SUMS, its signature verified first when a key is given (a clear-signed file's
    /// signed text is what is read then), else a warning when it is signed.
    private func sums(_ file: String, text: String) async throws -> ImportResult {
        let clearSigned = text.hasPrefix("-----BEGIN PGP SIGNED MESSAGE-----")
        let detached = file + ".minisig"
        let rule: SignatureRule
        let written: String
        if let keyring {
            let absolute = URL(fileURLWithPath: keyring).standardizedFileURL.path
            rule = SignatureRule(kind: .gpg(keyring: absolute, fingerprints: []))
            written = "{gpg: {keyring: \(QuotedText.quoted(absolute))}}"
        } else if let minisignKey {
            guard let keyText = try? String(contentsOfFile: minisignKey, encoding: .utf8) else {
                throw CommandFailure(.invalid, "batchfetch: error: cannot read \(minisignKey)")
            }
            switch Ed25519Key.parse(keyText) {
            case .success(let key):
                rule = SignatureRule(kind: .minisign(key))
                written = "{minisign: {public_key: \(QuotedText.quoted(key.base64))}}"
            case .failure(let problem):
                throw CommandFailure(.invalid, "batchfetch: error: \(minisignKey): not a minisign public key: \(problem.message)")
            }
        } else {
            if clearSigned || FileManager.default.fileExists(atPath: detached) {
                Console.error("import: warning: \(file) is signed, but its signature was not checked (give --keyring or --minisign-key); "
                    + "its digests are imported as written")
            }
            return SumsImport.read(text, file: file, baseURL: baseURL)
        }
        var signature: Data?
        if case .minisign = rule.kind {
            guard let data = FileManager.default.contents(atPath: detached) else {
                throw CommandFailure(.invalid, "batchfetch: error: no signature at \(detached); nothing written")
            }
            signature = data
        }
        let verified: SignatureCheck.Verified
        switch await SignatureCheck(rule: rule).verify(fileAt: file, signature: signature) {
        case .success(let result): verified = result
        case .failure(let problem):
            throw CommandFailure(.invalid, "batchfetch: error: the signature of \(file) does not verify: \(problem.message); nothing written")
        }
        Console.error("import: \(file): good signature by \(verified.signer.description)")
        var result = SumsImport.read(verified.signedText ?? text, file: file, baseURL: baseURL)
        guard let baseURL, result.problems.isEmpty else { return result }
        let name = (file as NSString).lastPathComponent
        let base = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        var sumsJob = ImportedJob(urls: [base + ImportNames.percentEncodedPath(name)], dest: name, origin: "\(file) (signed)")
        sumsJob.id = name
        sumsJob.signature = written
        for index in result.jobs.indices {
            result.jobs[index].checksums = []
            result.jobs[index].checksumsFrom = name
        }
        result.jobs.insert(sumsJob, at: 0)
        return result
    }

    /// A CSV (or TSV, NDJSON) read as `jobs_from` reads it; its problems are the loader's, with
    /// their `file:line:col`, and always stop the import (a list's row is not a line to skip).
    private func csv(_ file: String) throws -> ImportResult {
        let absolute = URL(fileURLWithPath: file).standardizedFileURL.path
        let manifest: Manifest
        do {
            manifest = try ManifestLoader().load(bytes: Array("version: 1\njobs_from: [{file: \(QuotedText.quoted(absolute))}]\n".utf8),
                                                 displayPath: "<import>", baseDirectory: FileManager.default.currentDirectoryPath)
        } catch {
            DiagnosticPrinter.print(error)
            throw CommandFailure(.invalid)
        }
        return ImportResult(jobs: manifest.jobs.map { job in
            ImportedJob(urls: job.urls.map(\.redacted), dest: job.dest.redacted, size: job.size, checksums: job.checksums,
                        origin: "\(file):\(job.source.job.line)")
        })
    }
}
