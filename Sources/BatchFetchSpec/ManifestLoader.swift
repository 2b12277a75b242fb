import Foundation

/// Why a manifest could not be loaded.
public enum ManifestLoadError: Error, CustomStringConvertible {
    /// The file could not be read at all (missing, unreadable, a directory).
    case unreadable(path: String, reason: String)
    /// The file was read; these are all the problems found in it, in file order.
    case invalid([Diagnostic])

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "cannot read manifest '\(path)': \(reason)"
        case .invalid(let diagnostics):
            return diagnostics.map(\.description).joined(separator: "\n")
        }
    }
}

/// Loads a manifest file: YAML layer, decoding, then cross-job validation, reporting all problems
/// of all three in one pass.
///
/// A large file is parsed and decoded in pieces on all cores (``ManifestPieces``): the result,
/// problems included, is the same as from one piece, and any doubt (a YAML problem in a piece,
/// an anchor of the header defined again) parses the file whole instead.
public struct ManifestLoader: Sendable {
    /// Variables for `${VAR}` expansion; the process environment by default.
    public var environment: [String: String]
    /// Files at least this large are parsed in pieces; below it one core is fast enough
    /// (bench/results/manifest-100k.md). Tests and the fuzzer set it to 0 to
    /// compare pieces with the whole on small files.
    public var minimumPieceSize = 16 << 20
    /// How many pieces at most: one per core.
    public var pieceCount = ProcessInfo.processInfo.activeProcessorCount

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Reads and validates the manifest at `path`. Relative `output_dir` and the default output
    /// directory are resolved against the manifest's own directory, not the working directory, so
    /// a cron job gets the same files wherever it starts.
    public func load(path: String) throws(ManifestLoadError) -> Manifest {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw .unreadable(path: path, reason: "not a regular file")
        }
        if Int(info.st_size) > YAMLParser.maxFileSize {
            throw .invalid([Diagnostic(file: path, location: .start, message: YAMLParser.fileTooLargeMessage(Int(info.st_size)))])
        }
        let parsed = parse(try Self.readFile(path, size: Int(info.st_size)))
        let absolute = URL(fileURLWithPath: path).standardizedFileURL
        return try finish(parsed, displayPath: path, baseDirectory: absolute.deletingLastPathComponent().path)
    }

    private static func readFile(_ path: String, size: Int) throws(ManifestLoadError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            while count < size {
                let got = read(descriptor, buffer.baseAddress! + count, size - count)
                if got < 0 && errno == EINTR { continue }
                if got <= 0 {
                    failure = got < 0 ? errno : 0
                    break
                }
                count += got
            }
        }
        if failure != 0 { throw .unreadable(path: path, reason: String(cString: strerror(failure))) }
        return bytes
    }

    /// Validates manifest text that did not come from a file (tests, embedding programs).
    public func load(bytes: [UInt8], displayPath: String, baseDirectory: String) throws(ManifestLoadError) -> Manifest {
        try finish(parse(bytes), displayPath: displayPath, baseDirectory: baseDirectory)
    }

    /// What the YAML layer made of a file: one document, or one per piece.
    enum Parsed {
        case whole(YAMLParseResult)
        case pieces([YAMLParseResult])
    }

    /// Parses the file, in pieces when it is large and can be cut. The bytes are not needed
    /// afterwards, so the caller releases them before decoding starts.
    func parse(_ bytes: [UInt8]) -> Parsed {
        if let problem = YAMLParser.precheck(bytes) { return .whole(YAMLParseResult(root: nil, problems: [problem])) }
        if bytes.count >= minimumPieceSize, pieceCount >= 2, let pieces = Self.parsePieces(bytes, count: pieceCount) {
            return .pieces(pieces)
        }
        return .whole(YAMLParser.parseChecked(bytes))
    }

    /// Decodes and validates a parsed document. The document is released once decoded, so the
    /// node store and the manifest are not both held while validating.
    private func finish(
        _ parsed: consuming Parsed, displayPath: String, baseDirectory: String
    ) throws(ManifestLoadError) -> Manifest {
        var problems = ProblemCollector()
        let decoded: (manifest: Manifest?, problems: [(location: SourceLocation, message: String)])
        switch consume parsed {
        case .whole(let parsed):
            for problem in parsed.problems { problems.error(problem.message, at: problem.location) }
            guard let root = parsed.root else {
                if problems.isEmpty { problems.error("the manifest is empty; it needs 'version: 1' and 'jobs'", at: .start) }
                throw .invalid(problems.diagnostics(files: [displayPath]))
            }
            var decoder = ManifestDecoder(environment: environment)
            decoded.manifest = decoder.decode(consume root, path: displayPath, baseDirectory: baseDirectory)
            decoded.problems = decoder.problems.problems
        case .pieces(let pieces):
            decoded = decodePieces(consume pieces, path: displayPath, baseDirectory: baseDirectory)
        }
        var validator = ManifestValidator()
        if let manifest = decoded.manifest { validator.validate(manifest) }
        for problem in decoded.problems + validator.problems.problems {
            problems.error(problem.message, at: problem.location)
        }
        guard problems.isEmpty, let manifest = decoded.manifest else {
            throw .invalid(problems.diagnostics(files: decoded.manifest?.sourceFiles ?? [displayPath]))
        }
        return manifest
    }
}

