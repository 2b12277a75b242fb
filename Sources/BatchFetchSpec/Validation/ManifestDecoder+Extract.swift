/// `extract:` of a download job, in its three forms: `true` (every default), a string (`into`),
/// or a mapping of ``extractKeys``. Every problem is reported with its location; cross-job
/// rules (`into` overlapping another job's dest or tree) are ``ManifestValidator``'s.
extension ManifestDecoder {
    static let extractKeys = ["into", "format", "strip_components", "include", "exclude", "keep_archive", "max_size", "max_entries"]

    mutating func decodeExtract(_ entry: YAMLMappingEntry, dest: TemplatedString?, isUpload: Bool,
                                context: ProblemContext) -> Extract? {
        if isUpload {
            problems.error("\(context)'extract' does not apply to an upload job: it unpacks what a job downloads", at: entry.keyLocation)
            return nil
        }
        let context = context.appending("extract: ")
        var into: (text: String, location: SourceLocation)?
        var fields = Fields([])
        if let mapping = entry.value.mapping {
            checkKeys(mapping, allowed: Self.extractKeys, context: context)
            fields = Fields(mapping)
            if let value = fields["into"], let text = string(value, context: context) { into = (text, value.value.location) }
        } else if let scalar = entry.value.scalar, !entry.value.isNull {
            switch (scalar.style, scalar.value) {
            case (.plain, "true"), (.plain, "True"), (.plain, "TRUE"):
                break
            case (.plain, "false"), (.plain, "False"), (.plain, "FALSE"):
                return nil
            default:
                into = (scalar.value, entry.value.location)
            }
        } else {
            problems.error("\(context)'extract' must be true, a directory (into), or a mapping of "
                + Self.extractKeys.map { "'\($0)'" }.joined(separator: ", ") + ", found \(entry.value.kindDescription)",
                at: entry.value.location)
            return nil
        }

        var format = Extract.Format.auto
        if let value = fields["format"], let text = string(value, context: context) {
            if let known = Extract.Format(rawValue: text) {
                format = known
            } else {
                problems.error("\(context)'format' must be one of \(Extract.Format.allCases.map(\.rawValue).joined(separator: ", ")), "
                    + "found '\(text)'", at: value.value.location)
            }
        }

        let intoPath: TemplatedString?
        let intoLocation: SourceLocation
        if let into {
            intoLocation = into.location
            intoPath = templated(into.text, at: into.location, context: context, label: "'into'")
                .flatMap { normalizedDest($0, at: into.location, context: context, key: "into", kind: .directory) }
        } else {
            intoLocation = entry.keyLocation
            guard let dest else { return nil }  // the dest's own problem is reported
            guard let derived = Extract.defaultInto(forDest: dest.resolved) else {
                problems.error("\(context)cannot derive 'into' from '\(dest.redacted)': it has no archive suffix "
                    + "(.tar.gz, .zip, …); set 'into'", at: entry.keyLocation)
                return nil
            }
            intoPath = TemplatedString(literal: derived)
        }

        var stripComponents = 0
        if let value = fields["strip_components"], let number = integer(value, context: context, range: 0...1024) {
            stripComponents = number
        }
        let include = fields["include"].map { globs($0, context: context) } ?? []
        let exclude = fields["exclude"].map { globs($0, context: context) } ?? []
        var keepArchive = true
        if let value = fields["keep_archive"], let flag = boolean(value, context: context) { keepArchive = flag }
        var maxSize: Int64?
        if let value = fields["max_size"], let text = scalarText(value, context: context, expected: QuantityKind.size.example) {
            switch Quantity.bytes(text) {
            case .success(let bytes) where bytes > 0: maxSize = bytes
            case .success: problems.error("\(context)'max_size' must be more than 0, found '\(text)'", at: value.value.location)
            case .failure(let error):
                problems.error("\(context)'max_size': \(Self.describe(error, kind: .size, text: text))", at: value.value.location)
            }
        }
        var maxEntries = Extract.defaultMaxEntries
        if let value = fields["max_entries"], let number = integer(value, context: context, range: 1...Int(Int32.max)) {
            maxEntries = number
        }
        if format.isSingleFile, stripComponents != 0 || !include.isEmpty || !exclude.isEmpty {
            problems.error("\(context)a single compressed file ('format: \(format.rawValue)') has no entries to strip or select",
                           at: entry.keyLocation)
        }
        guard let intoPath else { return nil }
        if let dest, intoPath.resolved == dest.resolved || dest.resolved.hasPrefix(intoPath.resolved + "/") {
            problems.error("\(context)'into' (\(intoPath.redacted)) must not hold the archive itself (\(dest.redacted)): "
                + "the tree replaces 'into' whole", at: intoLocation)
            return nil
        }
        if let dest, intoPath.resolved.hasPrefix(dest.resolved + "/") {
            problems.error("\(context)'into' (\(intoPath.redacted)) cannot be beneath the archive's own dest (\(dest.redacted))",
                           at: intoLocation)
            return nil
        }
        return Extract(into: intoPath, intoLocation: intoLocation, format: format, stripComponents: stripComponents,
                       include: include, exclude: exclude, keepArchive: keepArchive, maxSize: maxSize, maxEntries: maxEntries)
    }

    /// `include`/`exclude`: a pattern or a list of them, each checked (``Glob/parse(_:)``).
    mutating func globs(_ entry: YAMLMappingEntry, context: ProblemContext) -> [Glob] {
        var result: [Glob] = []
        for (text, location) in stringList(entry, context: context) {
            switch Glob.parse(text) {
            case .success(let glob): result.append(glob)
            case .failure(let problem): problems.error("\(context)'\(entry.key)': \(problem.message)", at: location)
            }
        }
        return result
    }
}
