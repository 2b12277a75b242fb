/// What a source URL names (Docs/Sources.md): a Hugging Face repository at a revision, a Zenodo
/// record, a figshare article, a DOI, or a source an external resolver named in the manifest
/// lists. Parsed once, by validation, from the text alone: no network, no resolver run.
package enum SourceReference: Sendable, Hashable {
    case huggingFace(HubRepository)
    /// A Zenodo record id (digits) and an optional path or glob on its files' keys.
    case zenodo(record: String, path: String?)
    /// A figshare article id (digits) and an optional path or glob on its files' names.
    case figshare(article: String, path: String?)
    /// A DOI that is not Zenodo's (those are ``zenodo(record:path:)`` already): looked up
    /// through the handle API and followed to the repository it lands on.
    case doi(String)
    /// `NAME:ANYTHING` for a resolver the manifest's `resolvers:` names; the whole URL is what
    /// the command receives.
    case external(resolver: String, url: String)

    /// A repository on the Hugging Face Hub (`hf://[datasets/|spaces/]ORG/NAME[@REV][/PATH]`).
    package struct HubRepository: Sendable, Hashable {
        package enum Kind: String, Sendable, CaseIterable {
            case models, datasets, spaces

            /// The prefix of the repository's file URLs (`{endpoint}/{prefix}ORG/NAME/resolve/…`).
            package var filePrefix: String { self == .models ? "" : rawValue + "/" }
        }

        package var kind: Kind
        /// `ORG/NAME`.
        package var id: String
        /// A branch, tag or commit; `main` when none is given.
        package var revision: String
        /// A file, a directory or a glob inside the repository; nil for all of it.
        package var path: String?

        package init(kind: Kind, id: String, revision: String, path: String?) {
            self.kind = kind
            self.id = id
            self.revision = revision
            self.path = path
        }
    }

    /// The schemes built into batchfetch (besides http, https, s3 and gs).
    package static let builtInSchemes: Set<String> = ["hf", "zenodo", "figshare", "doi"]

    /// The scheme of `url` (`hf`, `zenodo`, `ia`, …): the letters before the first `:`, lowercased;
    /// nil when there is none.
    package static func scheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), colon > url.startIndex else { return nil }
        let name = url[..<colon]
        guard name.utf8.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2B || $0 == 0x2E }),
              let first = name.utf8.first, (first | 0x20) >= 0x61 && (first | 0x20) <= 0x7A else { return nil }
        return name.lowercased()
    }

    /// Whether `url` names a source: a built-in scheme or one of `resolvers`.
    package static func isSource(_ url: String, resolvers: Set<String>) -> Bool {
        guard let scheme = scheme(of: url) else { return false }
        return builtInSchemes.contains(scheme) || resolvers.contains(scheme)
    }

    /// The reference `url` names, or what is wrong with it. `resolvers` are the names the
    /// manifest's `resolvers:` gives.
    package static func parse(_ url: String, resolvers: Set<String>) -> Result<SourceReference, SourceProblem> {
        guard let scheme = scheme(of: url) else { return .failure(SourceProblem("'\(url)' names no source")) }
        let rest = String(url.dropFirst(scheme.count + 1))
        if resolvers.contains(scheme) {
            guard !rest.isEmpty else { return .failure(SourceProblem("'\(url)' gives the resolver '\(scheme)' nothing to resolve")) }
            return .success(.external(resolver: scheme, url: url))
        }
        switch scheme {
        case "hf": return parseHub(rest, url: url)
        case "zenodo": return parseRecord(rest, url: url, what: "Zenodo record").map { .zenodo(record: $0.0, path: $0.1) }
        case "figshare": return parseRecord(rest, url: url, what: "figshare article").map { .figshare(article: $0.0, path: $0.1) }
        case "doi": return parseDOI(rest, url: url)
        default: return .failure(SourceProblem("'\(url)': no resolver is named '\(scheme)' (add it under 'resolvers:')"))
        }
    }

    /// `//[KIND/]ORG/NAME[@REV][/PATH]`.
    private static func parseHub(_ rest: String, url: String) -> Result<SourceReference, SourceProblem> {
        let expected = "; expected hf://[datasets/|spaces/]ORG/NAME[@REVISION][/PATH]"
        guard rest.hasPrefix("//") else { return .failure(SourceProblem("'\(url)' does not start with 'hf://'" + expected)) }
        var segments = rest.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var kind = HubRepository.Kind.models
        if let first = segments.first, let named = HubRepository.Kind(rawValue: first), segments.count > 2 {
            kind = named
            segments.removeFirst()
        }
        guard segments.count >= 2, !segments[0].isEmpty, !segments[1].isEmpty else {
            return .failure(SourceProblem("'\(url)' names no repository" + expected))
        }
        var name = segments[1]
        var revision = "main"
        if let at = name.firstIndex(of: "@") {
            revision = String(name[name.index(after: at)...]).removingPercentEncoding ?? ""
            name = String(name[..<at])
            guard !revision.isEmpty, !revision.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } ?? false }) else {
                return .failure(SourceProblem("'\(url)' has an empty or unusable revision after '@'" + expected))
            }
        }
        for part in [segments[0], name] where !isRepositoryName(part) {
            return .failure(SourceProblem("'\(url)': '\(part)' is not a repository or organisation name (letters, digits, '-', '_', '.')"))
        }
        let path = directoryless(segments.dropFirst(2).joined(separator: "/"))
        if !path.isEmpty, let problem = pathProblem(path) { return .failure(SourceProblem("'\(url)': \(problem)")) }
        return .success(.huggingFace(HubRepository(kind: kind, id: segments[0] + "/" + name, revision: revision,
                                                   path: path.isEmpty ? nil : path)))
    }

    /// `ID[/PATH]` with a numeric id.
    private static func parseRecord(_ rest: String, url: String, what: String) -> Result<(String, String?), SourceProblem> {
        let id = rest.prefix { $0 != "/" }
        guard !id.isEmpty, id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return .failure(SourceProblem("'\(url)': a \(what) is its number, as in '\(url.prefix { $0 != ":" }):1234567'"))
        }
        let path = directoryless(String(rest.dropFirst(id.count + 1)))
        if !path.isEmpty, let problem = pathProblem(path) { return .failure(SourceProblem("'\(url)': \(problem)")) }
        return .success((String(id), path.isEmpty ? nil : path))
    }

    /// `10.PREFIX/SUFFIX`; Zenodo's own DOIs (`10.5281/zenodo.N`) are records, offline.
    private static func parseDOI(_ rest: String, url: String) -> Result<SourceReference, SourceProblem> {
        guard rest.hasPrefix("10."), let slash = rest.firstIndex(of: "/"), rest.index(after: slash) < rest.endIndex,
              rest.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            return .failure(SourceProblem("'\(url)' is not a DOI; expected doi:10.PREFIX/SUFFIX, as in doi:10.5281/zenodo.1234567"))
        }
        let suffix = rest[rest.index(after: slash)...].lowercased()
        if rest[..<slash] == "10.5281", suffix.hasPrefix("zenodo."),
           case let record = suffix.dropFirst("zenodo.".count), !record.isEmpty, record.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return .success(.zenodo(record: String(record), path: nil))
        }
        return .success(.doi(rest))
    }

    private static func isRepositoryName(_ text: String) -> Bool {
        !text.isEmpty && text != "." && text != ".." && text.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
        }
    }

    /// A path with the `/` a directory may be written with dropped (`data/` is `data`).
    private static func directoryless(_ path: String) -> String {
        path.hasSuffix("/") && !path.hasSuffix("//") ? String(path.dropLast()) : path
    }

    /// Why a path or glob inside a repository is unusable, or nil.
    private static func pathProblem(_ path: String) -> String? {
        if case .failure(let problem) = Glob.parse(path) { return problem.message }
        if path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) { return "the path '\(path)' has a '.' or '..' segment" }
        return nil
    }

    /// Which files of the listing a reference's path selects, and the path each is published
    /// under (Docs/Sources.md, "Shape"): a glob selects what it matches, relative to its longest
    /// leading directory without a glob character; a plain path selects that file (under its
    /// own name) or everything under that directory (relative to it); no path selects all.
    package struct Selection: Sendable {
        let pattern: Glob?
        let plain: String?
        /// The directory files are listed under and relative to ("" for the top).
        package let base: String

        package init(path: String?) {
            guard let path else {
                (pattern, plain, base) = (nil, nil, "")
                return
            }
            let segments = path.split(separator: "/")
            if let wild = segments.firstIndex(where: { $0.contains(where: { "*?".contains($0) }) }) {
                pattern = try? Glob.parse(path).get()
                plain = nil
                base = segments[..<wild].joined(separator: "/")
            } else {
                pattern = nil
                plain = path
                base = path
            }
        }

        /// The published path of the repository file `path`, or nil when it is not selected.
        package func relative(_ path: String) -> String? {
            if let pattern {
                guard pattern.matches(path) else { return nil }
                return base.isEmpty ? path : String(path.dropFirst(base.count + 1))
            }
            guard let plain else { return path }
            if path == plain { return String(path.split(separator: "/").last ?? Substring(path)) }
            return path.hasPrefix(plain + "/") ? String(path.dropFirst(plain.count + 1)) : nil
        }
    }
}

/// Why a source URL cannot be used, in words for a `file:line:col` message.
package struct SourceProblem: Error, Sendable, Equatable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }
}

/// An external resolver the manifest names (`resolvers: {NAME: {command: [...], timeout: 60s}}`):
/// a program that prints a source's files as JSON (Docs/Sources.md). Never run through a shell.
package struct ExternalResolver: Sendable, Hashable {
    /// The program (absolute: a relative one was resolved against the manifest's directory when
    /// decoding) and its arguments; the source URL is appended as the last argument.
    package var command: [String]
    /// Seconds before the resolver's process group is killed.
    package var timeout: Double

    package static let defaultTimeout = 60.0

    package init(command: [String], timeout: Double = ExternalResolver.defaultTimeout) {
        self.command = command
        self.timeout = timeout
    }
}

/// Where the repositories' APIs are (`hf: {endpoint}`, `zenodo: {endpoint}`, `figshare:
/// {endpoint}` under defaults or a job); nil: the environment's (`HF_ENDPOINT`…), else the
/// public service.
package struct RepositoryEndpoints: Sendable, Hashable {
    package var hf: String?
    package var zenodo: String?
    package var figshare: String?

    package init(hf: String? = nil, zenodo: String? = nil, figshare: String? = nil) {
        self.hf = hf
        self.zenodo = zenodo
        self.figshare = figshare
    }
}
