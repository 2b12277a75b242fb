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
public struct ManifestLoader: Sendable {
    /// Variables for `${VAR}` expansion; the process environment by default.
    public var environment: [String: String]

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
        let parsed = try Self.parseFile(path, size: Int(info.st_size))
        let absolute = URL(fileURLWithPath: path).standardizedFileURL
        return try finish(parsed, displayPath: path, baseDirectory: absolute.deletingLastPathComponent().path)
    }

    /// Reads and parses the file; the bytes are released before decoding starts.
    private static func parseFile(_ path: String, size: Int) throws(ManifestLoadError) -> YAMLParseResult {
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
        return YAMLParser.parse(bytes)
    }

    /// Validates manifest text that did not come from a file (tests, embedding programs).
    public func load(bytes: [UInt8], displayPath: String, baseDirectory: String) throws(ManifestLoadError) -> Manifest {
        try finish(YAMLParser.parse(bytes), displayPath: displayPath, baseDirectory: baseDirectory)
    }

    /// Decodes and validates a parsed document. The document is released once decoded, so the
    /// node store and the manifest are not both held while validating.
    private func finish(
        _ parsed: consuming YAMLParseResult, displayPath: String, baseDirectory: String
    ) throws(ManifestLoadError) -> Manifest {
        var problems = ProblemCollector()
        for problem in parsed.problems { problems.error(problem.message, at: problem.location) }
        guard let root = parsed.root else {
            if problems.isEmpty { problems.error("the manifest is empty; it needs 'version: 1' and 'jobs'", at: .start) }
            throw .invalid(problems.diagnostics(file: displayPath))
        }
        _ = consume parsed
        var decoder = ManifestDecoder(environment: environment)
        let manifest = decoder.decode(consume root, path: displayPath, baseDirectory: baseDirectory)
        var validator = ManifestValidator()
        if let manifest { validator.validate(manifest) }
        for problem in decoder.problems.problems + validator.problems.problems {
            problems.error(problem.message, at: problem.location)
        }
        guard problems.isEmpty, let manifest else {
            throw .invalid(problems.diagnostics(file: displayPath))
        }
        return manifest
    }
}
