import Foundation

/// Turns a YAML node tree into a ``Manifest``, collecting every problem with its location.
///
/// Decoding never stops at the first problem: a wrong value is reported and decoding goes on with
/// the next key, so one `validate` run lists everything to fix. Cross-job rules (unique ids,
/// dependencies, cycles, shared destinations) are checked afterwards by ``ManifestValidator``.
struct ManifestDecoder {
    static let topLevelKeys = [
        "version", "output_dir", "cache", "cache_link", "hash_mirrors", "concurrency", "per_host", "rate_limit", "shard_count", "defaults", "jobs", "jobs_from",
        "max_duration", "max_bytes", "cutoff", "hooks", "bandwidth",
        "resolvers",
    ]
    static let listKeys = ["file", "format", "id_prefix", "dest"]
    static let settingKeys = [
        "retries", "backoff", "backoff_max", "retry_after_max", "timeout", "deadline", "segments", "sources", "refresh",
        "allow_insecure_redirect", "cross_origin_headers", "netrc", "tls", "requests_per_second", "burst", "s3",
        "accept_html", "hf", "zenodo", "figshare",
    ]
    static let resolverKeys = ["command", "timeout"]
    static let tlsKeys = ["ca_file", "client_cert", "client_key"]
    static let s3Keys = ["region", "endpoint", "anonymous", "path_style", "profile"]
    static let defaultsKeys = settingKeys + ["headers", "hash_mirrors"]
    static let jobKeys = [
        "id", "url", "urls", "dest", "size", "checksum", "checksums_from", "depends_on", "method", "body",
        "headers", "upload", "form", "content_md5", "retry_post", "extract", "include", "exclude", "signature", "sig_url",
        "pieces",
    ] + settingKeys
    static let formKeys = ["file_field", "file_name", "content_type", "fields"]
    /// Keys of a download job that an upload job (`upload:`) must not have, with why.
    static let downloadOnlyKeys: [(key: String, why: String)] = [
        ("urls", "an upload has one target; use 'url'"),
        ("dest", "the file sent is 'upload'"),
        ("size", "the size is the file's"),
        ("checksum", "its digests are computed from the file and sent as Content-Digest"),
        ("checksums_from", "its digests are computed from the file and sent as Content-Digest"),
        ("segments", "a file is sent as one request"),
        ("sources", "a file is sent to one URL"),
        ("pieces", "its digests are computed from the file and sent as Content-Digest"),
        ("body", "the body is the file (or, with 'method: POST', the form)"),
    ]

    let expander: VariableExpander
    var problems = ProblemCollector()
    /// The manifest's directory: relative `output_dir` and `tls` paths start here.
    var baseDirectory = ""
    /// The schemes `resolvers:` names: URLs with them are sources (``SourceReference``).
    private var resolverNames: Set<String> = []
    /// Where `per_host` was given, if it was (see ``fitPerHost(_:)``).
    private var perHostLocation: SourceLocation?

    /// What job items are decoded with: the manifest's `defaults`.
    struct JobDefaults {
        var settings = JobSettings()
        var headers: [Job.Header] = []

        /// A job with only the defaults: decoded jobs start as copies of one, so they share its
        /// settings and its headers' box instead of each making its own (``Job``).
        func prototype() -> Job {
            Job(id: "", urls: [], dest: TemplatedString(literal: ""), headers: headers, settings: settings,
                source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        }
    }

    /// The top level of a manifest, decoded; its `jobs` items are still to be decoded.
    struct TopLevel {
        var manifest: Manifest
        var items: [YAMLNode]
        var defaults: JobDefaults
    }

    init(environment: [String: String]) {
        expander = VariableExpander(environment: environment)
    }

    /// Decodes the document; returns nil only when it is not even a mapping. A manifest returned
    /// alongside problems is partial and only good for further validation.
    mutating func decode(_ root: YAMLNode, path: String, baseDirectory: String) -> Manifest? {
        guard var top = decodeTopLevel(root, path: path, baseDirectory: baseDirectory) else { return nil }
        var jobs: [Job] = []
        jobs.reserveCapacity(top.items.count)
        decodeJobs(top.items, firstNumber: 1, defaults: top.defaults) { jobs.append($0) }
        top.items = []
        top.manifest.jobs = jobs
        appendListJobs(to: &top.manifest, defaults: top.defaults)
        fitPerHost(&top.manifest)
        return top.manifest
    }

    /// Decodes everything but the job items: the top-level keys and `defaults`, and finds the
    /// items. Nil only when the document is not a mapping.
    mutating func decodeTopLevel(_ root: YAMLNode, path: String, baseDirectory: String) -> TopLevel? {
        guard let entries = root.mapping else {
            problems.error(
                "a manifest is a mapping with 'version' and 'jobs', found \(root.kindDescription)", at: root.location)
            return nil
        }
        self.baseDirectory = baseDirectory
        checkKeys(entries, allowed: Self.topLevelKeys, context: "")
        let fields = Fields(entries)

        if let entry = fields["version"] {
            if let version = integer(entry, context: "", range: 0...Int.max), version != 1 {
                problems.error("unsupported manifest version \(version); this batchfetch reads version 1",
                               at: entry.value.location)
            }
        } else {
            problems.error("missing required key 'version' (add 'version: 1')", at: root.location)
        }

        var manifest = Manifest(path: path, outputDirectory: baseDirectory, jobs: [])
        if let entry = fields["output_dir"], let directory = directory(entry, base: baseDirectory) {
            manifest.outputDirectory = directory
        }
        if let entry = fields["cache"] { manifest.cache = directory(entry, base: baseDirectory) }
        if let entry = fields["cache_link"], let value: Manifest.CacheLink = oneOf(entry, context: "") {
            manifest.cacheLink = value
        }
        if let entry = fields["concurrency"], let value = integer(entry, context: "", range: 1...1024) {
            manifest.concurrency = value
        }
        if let entry = fields["per_host"], let value = integer(entry, context: "", range: 1...64) {
            manifest.perHost = value
        }
        perHostLocation = fields["per_host"]?.value.location
        if let entry = fields["shard_count"], let value = integer(entry, context: "", range: 1...Shard.maximumCount) {
            manifest.shardCount = value
        }
        if let entry = fields["rate_limit"], let text = scalarText(entry, context: "", expected: "a rate such as 50MB/s") {
            switch Quantity.rate(text) {
            case .success(let rate) where rate > 0:
                manifest.rateLimit = rate
            case .success:
                problems.error("'rate_limit' must be greater than zero", at: entry.value.location)
            case .failure(let error):
                problems.error("'rate_limit': \(Self.describe(error, kind: .rate, text: text))", at: entry.value.location)
            }
        }
        decodeBudget(fields, into: &manifest.budget)
        if let entry = fields["bandwidth"], let text = scalarText(entry, context: "", expected: "a rate or a timetable such as \"08:00,512Ki 19:00,10Mi 23:00,off\"") {
            do {
                manifest.bandwidth = try BandwidthTimetable(parsing: text)
            } catch {
                problems.error("'bandwidth': \(error.message)", at: entry.value.location)
            }
        }
        if let entry = fields["hooks"] { manifest.hooks = decodeHooks(entry, baseDirectory: baseDirectory) }

        var defaults = JobDefaults()
        if let entry = fields["defaults"] {
            if let mapping = entry.value.mapping {
                checkKeys(mapping, allowed: Self.defaultsKeys, context: "defaults: ")
                let defaultFields = Fields(mapping)
                decodeSettings(defaultFields, into: &defaults.settings, context: "defaults: ")
                if let headers = defaultFields["headers"] {
                    defaults.headers = decodeHeaders(headers, context: "defaults: ")
                }
                if let mirrors = defaultFields["hash_mirrors"] {
                    if fields["hash_mirrors"] != nil {
                        problems.error("give 'hash_mirrors' at the top level or under 'defaults', not both", at: mirrors.keyLocation)
                    } else {
                        manifest.hashMirrors = decodeHashMirrors(mirrors, context: "defaults: ")
                    }
                }
            } else if !entry.value.isNull {
                problems.error("'defaults' must be a mapping, found \(entry.value.kindDescription)", at: entry.value.location)
            }
        }

        if let entry = fields["hash_mirrors"] { manifest.hashMirrors = decodeHashMirrors(entry, context: "") }
        if let entry = fields["resolvers"] {
            manifest.resolvers = decodeResolvers(entry)
            resolverNames = Set(manifest.resolvers.keys)
        }
        if let entry = fields["jobs_from"] { manifest.lists = decodeLists(entry) }

        var top = TopLevel(manifest: manifest, items: [], defaults: defaults)
        guard let jobsEntry = fields["jobs"] else {
            if fields["jobs_from"] == nil {
                problems.error("missing required key 'jobs' (a list of jobs, or 'jobs_from' naming lists of them)",
                               at: root.location)
            }
            return top
        }
        guard let items = jobsEntry.value.sequence else {
            problems.error("'jobs' must be a list of jobs, found \(jobsEntry.value.kindDescription)",
                           at: jobsEntry.value.location)
            return top
        }
        if items.isEmpty && fields["jobs_from"] == nil {
            problems.error("'jobs' is empty; a manifest needs at least one job", at: jobsEntry.value.location)
        }
        top.items = items
        return top
    }

    // MARK: - Job lists

    /// `jobs_from`: a list of `{file, format, id_prefix, dest}` (or of file names). The files are
    /// read later, by ``appendListJobs(to:defaults:)``, once the YAML jobs are decoded.
    private mutating func decodeLists(_ entry: YAMLMappingEntry) -> [JobList] {
        guard let items = entry.value.sequence, !items.isEmpty else {
            problems.error("'jobs_from' must be a list of job lists such as [{file: urls.csv}], found "
                + (entry.value.sequence == nil ? entry.value.kindDescription : "an empty list"), at: entry.value.location)
            return []
        }
        if items.count >= SourceLocation.maximumFileCount {
            problems.error("'jobs_from' names \(items.count) lists; at most \(SourceLocation.maximumFileCount - 1) are read "
                + "(join them into fewer files)", at: entry.value.location)
            return []
        }
        var lists: [JobList] = []
        for (index, item) in items.enumerated() {
            let context = ProblemContext(stringLiteral: "jobs_from #\(index + 1): ")
            let fileEntry: YAMLMappingEntry
            var fields = Fields([])
            if item.scalar != nil && !item.isNull {
                fileEntry = YAMLMappingEntry(key: "file", keyLocation: item.location, value: item)
            } else if let mapping = item.mapping {
                checkKeys(mapping, allowed: Self.listKeys, context: context)
                fields = Fields(mapping)
                guard let entry = fields["file"] else {
                    problems.error("\(context)missing required key 'file' (the list's path, relative to the manifest)",
                                   at: item.location)
                    continue
                }
                fileEntry = entry
            } else {
                problems.error("\(context)must be a file name or a mapping with 'file', found \(item.kindDescription)",
                               at: item.location)
                continue
            }
            guard let file = templated(fileEntry, context: context)?.resolved else { continue }
            let url = URL(fileURLWithPath: file, relativeTo: URL(fileURLWithPath: baseDirectory, isDirectory: true))
            var list = JobList(file: file, path: url.standardizedFileURL.path, location: fileEntry.value.location)
            if let entry = fields["format"], let text = string(entry, context: context), text != "auto" {
                if let format = JobList.Format(rawValue: text) {
                    list.format = format
                } else {
                    let names = ["auto"] + JobList.Format.allCases.map(\.rawValue)
                    problems.error("\(context)'format' must be one of \(names.joined(separator: ", ")), found '\(text)'"
                        + Suggestion.hint(for: text, in: names), at: entry.value.location)
                }
            }
            if let entry = fields["id_prefix"], let text = string(entry, context: context) {
                if Self.isValidID(text) {
                    list.idPrefix = text
                } else {
                    problems.error("\(context)invalid id_prefix '\(text)'; it uses only letters, digits, '.', '_' and '-'",
                                   at: entry.value.location)
                }
            }
            if let entry = fields["dest"], let text = string(entry, context: context) {
                let rest = text.replacingOccurrences(of: "{path}", with: "p").replacingOccurrences(of: "{name}", with: "n")
                if rest.contains("{") || rest.contains("}") {
                    problems.error("\(context)'dest' may use {path} (the URL's path) and {name} (its last segment), "
                        + "found '\(text)'", at: entry.value.location)
                } else if !text.contains("{path}") && !text.contains("{name}") {
                    problems.error("\(context)'dest' must use {path} or {name}, or every row would write '\(text)'",
                                   at: entry.value.location)
                } else {
                    list.destTemplate = text
                }
            }
            lists.append(list)
        }
        return lists
    }

    /// Reads every list of `manifest.lists` and appends its rows' jobs, with `defaults`; each
    /// problem is reported at the list's `file:line:col`.
    mutating func appendListJobs(to manifest: inout Manifest, defaults: JobDefaults) {
        for (index, list) in manifest.lists.enumerated() {
            let reader = ListReader(list: list, file: index + 1)
            let decoder = ListJobDecoder(list: list, defaults: defaults)
            var jobs = manifest.jobs
            manifest.jobs = []
            jobs.reserveCapacity(jobs.count + reader.estimatedRows())
            do {
                try reader.read(problems: &problems) { row, problems in
                    if let job = decoder.job(row, problems: &problems) { jobs.append(job) }
                }
            } catch {
                switch error {
                case .unreadable(let reason):
                    problems.error("jobs_from: cannot read '\(list.file)': \(reason)", at: list.location)
                }
            }
            manifest.jobs = jobs
        }
    }

    /// Decodes job items numbered from `firstNumber` (for "job #N" in messages), handing each
    /// job to `emit`; an item that is not a mapping is a problem and no job.
    mutating func decodeJobs(_ items: [YAMLNode], firstNumber: Int, defaults: JobDefaults, emit: (Job) -> Void) {
        let prototype = defaults.prototype()
        for (index, item) in items.enumerated() {
            if let job = decodeJob(item, number: firstNumber + index, prototype: prototype) {
                emit(job)
            }
        }
    }

    /// Segments of one job must not be starved by the per-host cap, which is meant for many jobs:
    /// without `per_host`, the cap is the default or the most `segments: N` any job asks for,
    /// whichever is larger; an explicit `per_host` below a job's `segments: N` is a
    /// contradiction the user has to resolve (the job would silently run fewer connections than
    /// it says). `auto` adapts instead: it opens at most `per_host` connections. Under a
    /// `rate_limit` no job is segmented, so neither applies.
    mutating func fitPerHost(_ manifest: inout Manifest) {
        guard manifest.rateLimit == nil else { return }
        /// The per-host cap `job` needs: its `segments: N`, spread over its mirrors' hosts with
        /// `sources: all` (Docs/Mirrors.md).
        func needs(_ job: Job) -> Int {
            guard case .count(let count) = job.settings.segments else { return 1 }
            guard job.settings.sources == .all else { return count }
            let hosts = Set(job.urls.map { URL(string: $0.resolved)?.host ?? $0.resolved }).count
            return (count + max(1, hosts) - 1) / max(1, hosts)
        }
        guard let job = manifest.jobs.max(by: { needs($0) < needs($1) }) else { return }
        let needed = needs(job)
        guard let perHostLocation else {
            manifest.perHost = max(manifest.perHost, needed)
            return
        }
        if needed > manifest.perHost {
            var segments = "'segments: \(needed)'"
            if job.settings.sources == .all, case .count(let count) = job.settings.segments, count != needed {
                segments = "the \(needed) connections per host of 'segments: \(count)' over its mirrors"
            }
            problems.error("'per_host: \(manifest.perHost)' is less than \(segments) of job '\(job.id)' (line "
                + "\(job.source.job.line)): its segments would wait for each other; raise per_host to \(needed) or lower segments",
                at: perHostLocation)
        }
    }

    // MARK: - Jobs

    private mutating func decodeJob(
        _ node: YAMLNode, number: Int, prototype: Job
    ) -> Job? {
        guard let entries = node.mapping else {
            problems.error("job #\(number) must be a mapping with 'id' and 'url', found \(node.kindDescription)",
                           at: node.location)
            return nil
        }
        let fields = Fields(entries)

        var id = ""
        var context = ProblemContext.job(number: number)
        if let entry = fields["id"], let text = string(entry, context: context) {
            if Self.isValidID(text) {
                id = text
                context = .job(id: text)
            } else {
                problems.error("\(context)invalid id '\(text)'; ids use only letters, digits, '.', '_' and '-'",
                               at: entry.value.location)
            }
        } else if fields["id"] == nil {
            problems.error("\(context)missing required key 'id'", at: node.location)
        }
        checkKeys(entries, allowed: Self.jobKeys, context: context)

        let urls = decodeURLs(fields, at: node.location, context: context)
        let urlLocation = (fields["url"] ?? fields["urls"])?.value.location ?? node.location
        let isUpload = fields["upload"] != nil
        if isUpload {
            for (key, why) in Self.downloadOnlyKeys {
                if let entry = fields[key] {
                    problems.error("\(context)'\(key)' does not apply to an upload job: \(why)", at: entry.keyLocation)
                }
            }
        }
        let listing = decodeListing(fields, urls: urls, isUpload: isUpload, context: context)
        let dest: TemplatedString?
        let destLocation: SourceLocation
        if listing != nil, let entry = fields["dest"] {
            // A prefix's dest is a directory, written with its `/`.
            destLocation = entry.value.location
            dest = templated(entry, context: context).flatMap { written in
                guard written.resolved.hasSuffix("/") else {
                    problems.error("\(context)dest '\(written.redacted)' must end with '/': the \(listing?.reference == nil ? "objects under the prefix" : "files of the source") go into it",
                                   at: destLocation)
                    return nil
                }
                return normalizedDest(written, at: destLocation, context: context, kind: .directory)
            }
        } else if listing != nil {
            destLocation = urlLocation
            problems.error("\(context)a \(listing?.reference == nil ? "prefix URL" : "source") needs 'dest: DIR/', the directory its "
                + "\(listing?.reference == nil ? "objects" : "files") go into", at: urlLocation)
            dest = nil
        } else if let entry = fields["upload"] {
            destLocation = entry.value.location
            dest = templated(entry, context: context).flatMap { normalizedDest($0, at: destLocation, context: context, key: "upload") }
        } else if let entry = fields["dest"] {
            destLocation = entry.value.location
            dest = templated(entry, context: context).flatMap { normalizedDest($0, at: destLocation, context: context) }
        } else {
            destLocation = urlLocation
            dest = urls.first.flatMap { derivedDest(from: $0, at: urlLocation, context: context) }
        }

        var size: Int64?
        if let entry = fields["size"], let text = scalarText(entry, context: context, expected: "a size such as 123 or 1.5GiB") {
            switch Self.size(text) {
            case .success(let value): size = value
            case .failure(let problem): problems.error("\(context)\(problem.message)", at: entry.value.location)
            }
        }

        let checksums = fields["checksum"].map { decodeChecksums($0, context: context) } ?? []
        if size == nil, checksums.contains(where: { $0.algorithm == .gitSHA1 }), let entry = fields["checksum"] {
            problems.error("\(context)a 'git-sha1' checksum needs the job's 'size' (git hashes it before the bytes)", at: entry.value.location)
        }
        var checksumsFrom: String?
        var checksumsFromLocation: SourceLocation?
        if let entry = fields["checksums_from"], let text = string(entry, context: context) {
            checksumsFrom = text
            checksumsFromLocation = entry.value.location
            if fields["checksum"] != nil {
                problems.error("\(context)use either 'checksum' or 'checksums_from', not both", at: entry.keyLocation)
            }
        }

        var dependsOn: [String] = []
        var dependsOnLocations: [SourceLocation] = []
        if let entry = fields["depends_on"] {
            for (text, location) in stringList(entry, context: context) {
                dependsOn.append(text)
                dependsOnLocations.append(location)
            }
        }

        var method = isUpload ? Job.Method.put : .get
        if let entry = fields["method"], let text = string(entry, context: context) {
            let allowed: [Job.Method] = isUpload ? [.put, .post] : [.get, .post]
            if let value = Job.Method(rawValue: text), allowed.contains(value) {
                method = value
            } else {
                let hint = text == "PUT" ? " ('method: PUT' sends a file: add 'upload: <path>')" : ""
                problems.error("\(context)'method' must be \(allowed.map(\.rawValue).joined(separator: " or "))"
                    + "\(isUpload ? " for an upload" : ""), found '\(text)'\(hint)", at: entry.value.location)
            }
        }
        let upload = decodeUpload(fields, isUpload: isUpload, method: method, context: context)
        let extract = listing != nil ? nil : fields["extract"].flatMap { decodeExtract($0, dest: dest, isUpload: isUpload, context: context) }
        let signature = decodeSignature(fields, isUpload: isUpload, context: context)
        let pieces = isUpload ? nil : decodePieces(fields, size: size, context: context)
        var body: TemplatedString?
        if let entry = fields["body"] {
            body = templated(entry, context: context)
            if method != .post, !isUpload {
                problems.error("\(context)'body' is only sent with 'method: POST'", at: entry.keyLocation)
            }
        }

        var job = prototype
        if let entry = fields["headers"] {
            var headers = prototype.headers
            for header in decodeHeaders(entry, context: context) {
                headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
                headers.append(header)
            }
            job.headers = headers
        }
        decodeSettings(fields, into: &job.settings, context: context)

        // A job with problems is still returned, so cross-job rules see its id and dependencies;
        // an empty dest marks one that could not be decoded. Only what differs from the
        // prototype is written, so a plain job keeps its shared boxes.
        job.id = id
        job.urls = urls
        job.dest = dest ?? TemplatedString(literal: "")
        job.size = size
        job.checksums = checksums
        if checksumsFrom != nil { job.checksumsFrom = checksumsFrom }
        if !dependsOn.isEmpty { job.dependsOn = dependsOn }
        if method != .get { job.method = method }
        if body != nil { job.body = body }
        if upload != nil { job.upload = upload }
        if extract != nil { job.extract = extract }
        if listing != nil { job.listing = listing }
        if signature != nil { job.signature = signature }
        if pieces != nil { job.pieces = pieces }
        job.source = JobSource(
            job: node.location, id: fields["id"]?.value.location ?? node.location, dest: destLocation,
            dependsOn: dependsOnLocations, checksumsFrom: checksumsFromLocation)
        return job
    }

    /// The upload part of a job: `form` (POST only), `content_md5`, `retry_post` (POST only);
    /// nil for a download job, where each of them is a problem.
    private mutating func decodeUpload(_ fields: Fields, isUpload: Bool, method: Job.Method, context: ProblemContext) -> Upload? {
        guard isUpload else {
            for key in ["form", "content_md5", "retry_post"] {
                if let entry = fields[key] {
                    problems.error("\(context)'\(key)' belongs to an upload job (one with 'upload: <path>')", at: entry.keyLocation)
                }
            }
            return nil
        }
        var form: Upload.Form?
        if let entry = fields["form"] {
            if method != .post {
                problems.error("\(context)'form' is sent with 'method: POST' (multipart/form-data); a PUT sends the file as the body",
                               at: entry.keyLocation)
            }
            form = decodeForm(entry, context: context)
        } else if method == .post {
            form = Upload.Form()
        }
        var contentMD5 = false
        if let entry = fields["content_md5"], let value = boolean(entry, context: context) { contentMD5 = value }
        var retryPost = false
        if let entry = fields["retry_post"], let value = boolean(entry, context: context) {
            retryPost = value
            if method != .post {
                problems.error("\(context)'retry_post' applies to 'method: POST' (a PUT is always retried)", at: entry.keyLocation)
            }
        }
        return Upload(form: form, contentMD5: contentMD5, retryPost: retryPost)
    }

    /// `form:`: the file part's field name, file name and content type, and extra text fields.
    /// Names and the file name go into a `Content-Disposition` header, so quotes, line breaks
    /// and control characters are refused there.
    private mutating func decodeForm(_ entry: YAMLMappingEntry, context: ProblemContext) -> Upload.Form {
        var form = Upload.Form()
        guard let mapping = entry.value.mapping else {
            if !entry.value.isNull {
                problems.error("\(context)'form' must be a mapping with \(Self.formKeys.map { "'\($0)'" }.joined(separator: ", ")), "
                    + "found \(entry.value.kindDescription)", at: entry.value.location)
            }
            return form
        }
        let formContext = context.appending("form: ")
        checkKeys(mapping, allowed: Self.formKeys, context: formContext)
        let fields = Fields(mapping)
        func headerSafe(_ text: String, _ what: String, at location: SourceLocation) -> Bool {
            let bad = text.unicodeScalars.contains { $0 == "\"" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F }
            if bad || text.isEmpty {
                problems.error("\(formContext)\(what) '\(text.debugDescription.dropFirst().dropLast())' "
                    + (text.isEmpty ? "is empty" : "holds a quote, backslash or control character"), at: location)
            }
            return !bad && !text.isEmpty
        }
        if let entry = fields["file_field"], let text = string(entry, context: formContext),
           headerSafe(text, "'file_field'", at: entry.value.location) {
            form.fileField = text
        }
        if let entry = fields["file_name"], let text = string(entry, context: formContext),
           headerSafe(text, "'file_name'", at: entry.value.location) {
            form.fileName = text
        }
        if let entry = fields["content_type"], let text = string(entry, context: formContext) {
            if text.contains(where: { $0 == "\r" || $0 == "\n" }) || !text.contains("/") {
                problems.error("\(formContext)'content_type' must be a media type such as application/gzip, found '\(text)'",
                               at: entry.value.location)
            } else {
                form.contentType = text
            }
        }
        if let entry = fields["fields"] {
            if let items = entry.value.mapping {
                for item in items where headerSafe(item.key, "field name", at: item.keyLocation) {
                    if item.key == form.fileField {
                        problems.error("\(formContext)field '\(item.key)' is also the file's field name", at: item.keyLocation)
                    } else if let value = templated(item, context: formContext, describedAs: "field '\(item.key)'") {
                        form.fields.append(Job.Header(name: item.key, value: value))
                    }
                }
            } else if !entry.value.isNull {
                problems.error("\(formContext)'fields' must be a mapping of field names to text, found \(entry.value.kindDescription)",
                               at: entry.value.location)
            }
        }
        return form
    }

    static func isValidID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// `url` or `urls`, exactly one of them, each an http(s) URL.
    private mutating func decodeURLs(
        _ fields: Fields, at location: SourceLocation, context: ProblemContext
    ) -> [TemplatedString] {
        var candidates: [(entry: YAMLMappingEntry, node: YAMLNode)] = []
        switch (fields["url"], fields["urls"]) {
        case (nil, nil):
            problems.error("\(context)missing 'url' (or 'urls' for a list of mirrors)", at: location)
            return []
        case (.some, .some(let urls)):
            problems.error("\(context)use either 'url' or 'urls', not both", at: urls.keyLocation)
            return []
        case (.some(let url), nil):
            candidates = [(url, url.value)]
        case (nil, .some(let urls)):
            guard let items = urls.value.sequence else {
                problems.error("\(context)'urls' must be a list of URLs, found \(urls.value.kindDescription)",
                               at: urls.value.location)
                return []
            }
            if items.isEmpty {
                problems.error("\(context)'urls' is empty; give at least one URL", at: urls.value.location)
            }
            candidates = items.map { (urls, $0) }
        }
        var result: [TemplatedString] = []
        for (entry, node) in candidates {
            let item = YAMLMappingEntry(key: entry.key, keyLocation: entry.keyLocation, value: node)
            guard let url = templated(item, context: context) else { continue }
            if SourceReference.isSource(url.resolved, resolvers: resolverNames) {
                result.append(url)  // parsed with its job's other keys (``decodeListing``)
            } else if let problem = Self.urlProblem(url, objectStores: true) {
                problems.error("\(context)\(problem)", at: node.location)
            } else {
                result.append(url)
            }
        }
        return result
    }

    /// A directory the manifest names (`output_dir`, `cache`), absolute: relative to the
    /// manifest's directory `base`, so a cron job finds the same one wherever it starts.
    /// Expanded like every templated value (`${OUTDIR:-out}`); a directory is not a secret.
    private mutating func directory(_ entry: YAMLMappingEntry, base: String) -> String? {
        guard let text = templated(entry, context: "")?.resolved else { return nil }
        guard !text.isEmpty else {
            problems.error("'\(entry.key)' must not be empty", at: entry.value.location)
            return nil
        }
        return URL(fileURLWithPath: text, relativeTo: URL(fileURLWithPath: base, isDirectory: true)).standardizedFileURL.path
    }

    /// `hash_mirrors`: URL templates, each with `{sha256}` and no other placeholder than
    /// `{sha256_2}`, an http(s) URL once they are filled in.
    private mutating func decodeHashMirrors(_ entry: YAMLMappingEntry, context: ProblemContext) -> [TemplatedString] {
        var result: [TemplatedString] = []
        for (text, location) in stringList(entry, context: context) {
            guard let template = templated(text, at: location, context: context, label: "'hash_mirrors' entry") else { continue }
            let rest = template.resolved.replacingOccurrences(of: "{sha256}", with: "").replacingOccurrences(of: "{sha256_2}", with: "")
            if !template.resolved.contains("{sha256}") {
                problems.error("\(context)hash mirror '\(template.redacted)' has no '{sha256}' (the content's digest goes there)",
                               at: location)
            } else if let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
                problems.error("\(context)hash mirror '\(template.redacted)': unknown placeholder '\(rest[open...close])' "
                               + "(known: {sha256}, {sha256_2})", at: location)
            } else if let problem = Self.urlProblem(template.replacing("{sha256}", with: String(repeating: "0", count: 64))
                .replacing("{sha256_2}", with: "00")) {
                problems.error("\(context)hash mirror: \(problem)", at: location)
            } else {
                result.append(template)
            }
        }
        return result
    }

    /// The listing of a job whose URL is a bucket prefix (``ObjectListing``), with its
    /// `include`/`exclude`; nil for any other job, whose `include`/`exclude` are refused. A prefix
    /// job has one URL and no key that names one file's content (`size`, `checksum`,
    /// `checksums_from`, `extract`), and is not an upload.
    private mutating func decodeListing(_ fields: Fields, urls: [TemplatedString], isUpload: Bool,
                                        context: ProblemContext) -> ObjectListing? {
        let sources = urls.filter { SourceReference.isSource($0.resolved, resolvers: resolverNames) }
        let prefixes = sources + urls.filter { ObjectURL.isPrefix($0.resolved) }
        let urlEntry = fields["url"] ?? fields["urls"]
        guard !prefixes.isEmpty, !isUpload else {
            for key in ["include", "exclude"] {
                if let entry = fields[key] {
                    problems.error("\(context)'\(key)' applies only to a bucket prefix or a source (a URL such as s3://bucket/dir/ or hf://org/name)",
                                   at: entry.keyLocation)
                }
            }
            if isUpload, let source = sources.first, let entry = urlEntry {
                problems.error("\(context)an upload cannot go to a source (\(source.redacted))", at: entry.value.location)
            }
            return nil
        }
        if urls.count > 1, let entry = fields["urls"] {
            problems.error("\(context)a \(sources.isEmpty ? "prefix" : "source") (\(prefixes[0].redacted)) is listed from one URL; give it alone",
                           at: entry.value.location)
        }
        let what = sources.isEmpty ? "a prefix: it becomes one job per object" : "a source: it becomes one job per file"
        for key in ["size", "checksum", "checksums_from", "extract", "pieces"] {
            if let entry = fields[key] {
                problems.error("\(context)'\(key)' does not apply to \(what)", at: entry.keyLocation)
            }
        }
        var reference: SourceReference?
        if let source = sources.first {
            switch SourceReference.parse(source.resolved, resolvers: resolverNames) {
            case .success(let parsed): reference = parsed
            case .failure(let problem):
                // Still a listing: its `dest: DIR/` is not a second problem.
                problems.error("\(context)\(problem.message)", at: urlEntry?.value.location ?? .start)
            }
        }
        let include = fields["include"].map { globs($0, context: context) } ?? []
        let exclude = fields["exclude"].map { globs($0, context: context) } ?? []
        return ObjectListing(include: include, exclude: exclude, reference: reference)
    }

    /// Why a URL is unusable, or nil. Messages show the redacted form only. `objectStores`
    /// also accepts `s3://bucket/key` and `gs://bucket/object` (a job's URLs; Docs/ObjectStores.md).
    static func urlProblem(_ url: TemplatedString, objectStores: Bool = false) -> String? {
        if URLSyntax.isPlainHTTPURL(url.resolved) { return nil }
        let shown = url.redacted
        if url.resolved.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            return "URL '\(shown)' contains a space or control character; percent-encode it (a space is %20)"
        }
        if let scheme = SourceReference.scheme(of: url.resolved), !url.resolved.contains("://"),
           !url.resolved.dropFirst(scheme.count + 1).hasPrefix("/"), url.resolved.dropFirst(scheme.count + 1).first?.isNumber != true {
            // `ia:thing`: a scheme of its own, not `host:port/path`.
            return "unsupported URL scheme '\(scheme)' in '\(shown)' (expected http, https, s3, gs, hf, zenodo, figshare, doi, "
                + "or a resolver named under 'resolvers:')"
        }
        if !url.resolved.contains("://") {
            // `127.0.0.1:8080/x` or `localhost:8080/x` would parse as a scheme and a path.
            return "URL '\(shown)' has no scheme; write 'https://\(shown)' (or 'http://\(shown)')"
        }
        if objectStores, let parsed = ObjectURL.parse(url.resolved, shown: shown) {
            // A key that is empty or ends with `/` is a prefix (``ObjectListing``).
            if case .failure(let problem) = parsed { return problem.message }
            return nil
        }
        guard let components = URLComponents(string: url.resolved), let scheme = components.scheme else {
            return "'\(shown)' is not a valid URL"
        }
        guard scheme.lowercased() == "http" || scheme.lowercased() == "https" else {
            return "unsupported URL scheme '\(scheme)' in '\(shown)' (expected \(objectStores ? "http, https, s3 or gs" : "http or https"))"
        }
        guard let host = components.host, !host.isEmpty else {
            return "URL '\(shown)' has no host"
        }
        return nil
    }

    /// `dest` (or an upload's `upload`, named by `key`) as a normalised path inside output_dir.
    mutating func normalizedDest(
        _ dest: TemplatedString, at location: SourceLocation, context: ProblemContext, key: String = "dest", kind: DestPath.Kind = .file
    ) -> TemplatedString? {
        switch DestPath.normalize(dest.resolved, as: kind) {
        case .success(let path):
            // Keep the parts (and so the redaction) unless normalisation changed the text.
            return path == dest.resolved ? dest : TemplatedString(literal: path)
        case .failure(let problem):
            let message = problem.message(key: key, shown: dest.redacted)
            problems.error("\(context)\(message)", at: location)
            return nil
        }
    }

    /// The file name of the first URL, for jobs that give no `dest`. A name that comes from an
    /// environment variable is refused: it would be a secret in every report line.
    private mutating func derivedDest(
        from url: TemplatedString, at location: SourceLocation, context: ProblemContext
    ) -> TemplatedString? {
        guard let raw = DestPath.rawLastSegment(ofURL: url.resolved), let name = DestPath.lastSegment(ofURL: url.resolved) else {
            let raw = DestPath.rawLastSegment(ofURL: url.resolved)
            let decoded = raw.map { $0.removingPercentEncoding ?? $0 } ?? ""
            let why: String
            if raw == nil {
                why = "it has no path"
            } else if decoded.utf8.contains(UInt8(ascii: "/")) {
                why = "its last segment '\(raw ?? "")' decodes to '\(decoded)', which holds a '/'"
            } else if decoded == "." || decoded == ".." {
                why = "its last segment is '\(decoded)'"
            } else {
                why = "its path ends with '/', so it names no file"
            }
            problems.error("\(context)cannot name the file after '\(url.redacted)': \(why); set 'dest'", at: location)
            return nil
        }
        if DestPath.hasControlCharacter(name) || name.utf8.count > DestPath.nameMax {
            problems.error("\(context)the file name in '\(url.redacted)' decodes to "
                + (name.utf8.count > DestPath.nameMax ? "more than \(DestPath.nameMax) bytes" : "a control character")
                + "; set 'dest'", at: location)
            return nil
        }
        let shown = url.redacted.utf8
        let cut = shown.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? shown.endIndex
        guard shown[..<cut].reversed().starts(with: ("/" + raw).utf8.reversed()) else {
            problems.error("\(context)the file name in '\(url.redacted)' comes from a variable; set 'dest'", at: location)
            return nil
        }
        return TemplatedString(literal: name)
    }

    private mutating func decodeChecksums(_ entry: YAMLMappingEntry, context: ProblemContext) -> [Checksum] {
        var result: [Checksum] = []
        for (text, location) in stringList(entry, context: context) {
            switch Checksum.parse(text) {
            case .success(let checksum):
                if result.contains(where: { $0.algorithm == checksum.algorithm }) {
                    problems.error("\(context)more than one \(checksum.algorithm.rawValue) checksum", at: location)
                } else {
                    result.append(checksum)
                }
            case .failure(let error):
                problems.error("\(context)\(Self.describe(error, text: text))", at: location)
            }
        }
        return result
    }

    static func describe(_ error: Checksum.ParseError, text: String) -> String {
        let names = Checksum.Algorithm.allCases.map(\.rawValue).joined(separator: ", ")
        switch error {
        case .missingAlgorithm:
            return "checksum '\(text)' lacks its algorithm; write it as 'sha256:<hex>'"
        case .unknownAlgorithm(let name):
            return "unknown checksum algorithm '\(name)'\(Suggestion.hint(for: name, in: Checksum.Algorithm.allCases.map(\.rawValue))); expected one of \(names)"
        case .wrongLength(let algorithm, let count):
            return "\(algorithm.rawValue) checksum must be \(algorithm.hexLength) hex digits, found \(count)"
        case .notHex(let algorithm):
            return "\(algorithm.rawValue) checksum must be hexadecimal digits (0-9, a-f)"
        }
    }

    private mutating func decodeHeaders(_ entry: YAMLMappingEntry, context: ProblemContext) -> [Job.Header] {
        guard let mapping = entry.value.mapping else {
            if !entry.value.isNull {
                problems.error("\(context)'headers' must be a mapping of header names to values, found \(entry.value.kindDescription)",
                               at: entry.value.location)
            }
            return []
        }
        var result: [Job.Header] = []
        for header in mapping {
            guard Self.isToken(header.key) else {
                problems.error("\(context)'\(header.key)' is not a valid HTTP header name", at: header.keyLocation)
                continue
            }
            if let value = templated(header, context: context, describedAs: "header '\(header.key)'") {
                if value.resolved.contains(where: { $0 == "\r" || $0 == "\n" }) {
                    problems.error("\(context)header '\(header.key)' contains a line break", at: header.value.location)
                } else {
                    result.append(Job.Header(name: header.key, value: value))
                }
            }
        }
        return result
    }

    /// RFC 9110 token characters, which header names are made of.
    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
        }
    }

    // MARK: - Settings shared by defaults and jobs

    private mutating func decodeSettings(
        _ fields: Fields, into settings: inout JobSettings, context: ProblemContext
    ) {
        if let entry = fields["retries"], let value = integer(entry, context: context, range: 0...100) {
            settings.retries = value
        }
        if let entry = fields["backoff"], let value = duration(entry, context: context) {
            settings.backoff = value
        }
        if let entry = fields["backoff_max"], let value = duration(entry, context: context) {
            settings.backoffMax = value
        }
        if let entry = fields["timeout"], let value = duration(entry, context: context) {
            if value < 1 {
                problems.error("\(context)'timeout' must be at least 1s (URLSession cannot time out sooner)",
                               at: entry.value.location)
            } else {
                settings.timeout = value
            }
        }
        if let entry = fields["deadline"], let value = duration(entry, context: context) {
            settings.deadline = value
        }
        if let entry = fields["segments"], let text = scalarText(entry, context: context, expected: "1..16 or auto") {
            if text == "auto" {
                settings.segments = .auto
            } else if entry.value.scalar?.style == .plain, let count = Int(text), (1...16).contains(count) {
                settings.segments = .count(count)
            } else {
                problems.error("\(context)'segments' must be a number from 1 to 16 or 'auto', found '\(text)'",
                               at: entry.value.location)
            }
        }
        if let entry = fields["sources"], let value: JobSettings.Sources = oneOf(entry, context: context) {
            settings.sources = value
        }
        if let entry = fields["refresh"], let value: JobSettings.Refresh = oneOf(entry, context: context) {
            settings.refresh = value
        }
        if let entry = fields["retry_after_max"], let value = duration(entry, context: context) {
            settings.retryAfterMax = value
        }
        if let entry = fields["allow_insecure_redirect"], let value = boolean(entry, context: context) {
            settings.allowInsecureRedirect = value
        }
        if let entry = fields["cross_origin_headers"] {
            settings.crossOriginHeaders = []
            for (name, location) in stringList(entry, context: context) {
                if Self.isToken(name) {
                    settings.crossOriginHeaders.append(name.lowercased())
                } else {
                    problems.error("\(context)'\(name)' in 'cross_origin_headers' is not a valid HTTP header name", at: location)
                }
            }
        }
        if let entry = fields["netrc"], let value = boolean(entry, context: context) {
            settings.netrc = value
        }
        if let entry = fields["requests_per_second"], let value = integer(entry, context: context, range: 1...100_000) {
            settings.requestsPerSecond = value
        }
        if let entry = fields["burst"], let value = integer(entry, context: context, range: 1...100_000) {
            settings.requestBurst = value
        }
        if let entry = fields["tls"] {
            decodeTLS(entry, into: &settings.tls, context: context)
        }
        if let entry = fields["s3"] {
            decodeS3(entry, into: &settings.s3, context: context)
        }
        if let entry = fields["accept_html"], let value = boolean(entry, context: context) {
            settings.acceptHTML = value
        }
        for key in ["hf", "zenodo", "figshare"] {
            guard let entry = fields[key] else { continue }
            let endpoint = decodeEndpoint(entry, context: context.appending("\(key): "))
            switch key {
            case "hf": settings.repositories.hf = endpoint ?? settings.repositories.hf
            case "zenodo": settings.repositories.zenodo = endpoint ?? settings.repositories.zenodo
            default: settings.repositories.figshare = endpoint ?? settings.repositories.figshare
            }
        }
        if settings.backoffMax < settings.backoff, let entry = fields["backoff_max"] ?? fields["backoff"] {
            problems.error("\(context)'backoff_max' (\(settings.backoffMax)s) is below 'backoff' (\(settings.backoff)s)",
                           at: entry.value.location)
        }
    }

    /// The `tls` mapping, key by key over what `defaults` gave: paths to PEM files that must
    /// exist now (a typo found by `validate`, not by a failed handshake at 3 a.m.).
    private mutating func decodeTLS(_ entry: YAMLMappingEntry, into tls: inout TLSSettings, context: ProblemContext) {
        guard let mapping = entry.value.mapping else {
            problems.error("\(context)'tls' must be a mapping with \(Self.tlsKeys.map { "'\($0)'" }.joined(separator: ", ")), found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return
        }
        checkKeys(mapping, allowed: Self.tlsKeys, context: context.appending("tls: "))
        let fields = Fields(mapping)
        let files = context.appending("tls: ")
        if let entry = fields["ca_file"] { tls.caFile = existingFile(entry, context: files) }
        if let entry = fields["client_cert"] { tls.clientCertificate = existingFile(entry, context: files) }
        if let entry = fields["client_key"] { tls.clientKey = existingFile(entry, context: files) }
        if (tls.clientCertificate == nil) != (tls.clientKey == nil) {
            problems.error("\(context)tls: 'client_cert' and 'client_key' go together; give both", at: entry.value.location)
        }
    }

    /// `{endpoint: URL}` of a repository (`hf`, `zenodo`, `figshare`): an http(s) URL.
    private mutating func decodeEndpoint(_ entry: YAMLMappingEntry, context: ProblemContext) -> String? {
        guard let mapping = entry.value.mapping else {
            problems.error("\(context)must be a mapping with 'endpoint', found \(entry.value.kindDescription)", at: entry.value.location)
            return nil
        }
        checkKeys(mapping, allowed: ["endpoint"], context: context)
        guard let endpoint = Fields(mapping)["endpoint"], let url = templated(endpoint, context: context) else { return nil }
        if let problem = Self.urlProblem(url) {
            problems.error("\(context)'endpoint': \(problem)", at: endpoint.value.location)
            return nil
        }
        return url.resolved.hasSuffix("/") ? String(url.resolved.dropLast()) : url.resolved
    }

    /// `resolvers:`: `{NAME: {command: [PROGRAM, ARG…], timeout: 60s}}`. A name is a URL scheme
    /// that is not one batchfetch knows; a relative program is relative to the manifest.
    private mutating func decodeResolvers(_ entry: YAMLMappingEntry) -> [String: ExternalResolver] {
        guard let mapping = entry.value.mapping else {
            problems.error("'resolvers' must be a mapping of names to {command: [...]}, found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return [:]
        }
        var resolvers: [String: ExternalResolver] = [:]
        for item in mapping {
            let context = ProblemContext(stringLiteral: "resolvers: \(item.key): ")
            let name = item.key
            if SourceReference.scheme(of: name + ":") != name {
                problems.error("resolver name '\(name)' is not a URL scheme (lowercase letters, digits, '+', '-', '.'; a letter first)",
                               at: item.keyLocation)
                continue
            }
            if SourceReference.builtInSchemes.contains(name) || ["http", "https", "s3", "gs", "file"].contains(name) {
                problems.error("resolver name '\(name)' is a scheme batchfetch already knows", at: item.keyLocation)
                continue
            }
            guard let fields = item.value.mapping.map(Fields.init) else {
                problems.error("\(context)must be a mapping with 'command', found \(item.value.kindDescription)", at: item.value.location)
                continue
            }
            checkKeys(fields.entries, allowed: Self.resolverKeys, context: context)
            var resolver = ExternalResolver(command: [])
            if let command = fields["command"] {
                let words = stringList(command, context: context).map(\.0)
                if words.isEmpty || words[0].isEmpty {
                    problems.error("\(context)'command' must name a program: [PROGRAM, ARG…]", at: command.value.location)
                    continue
                }
                var program = words[0]
                if program.contains("/"), !program.hasPrefix("/") {
                    program = URL(fileURLWithPath: program, relativeTo: URL(fileURLWithPath: baseDirectory, isDirectory: true)).standardizedFileURL.path
                }
                resolver.command = [program] + words.dropFirst()
            } else {
                problems.error("\(context)missing 'command'", at: item.keyLocation)
                continue
            }
            if let timeout = fields["timeout"], let value = duration(timeout, context: context) {
                resolver.timeout = value
            }
            resolvers[name] = resolver
        }
        return resolvers
    }

    /// The `s3` mapping, key by key over what `defaults` gave. Credentials never go here: they
    /// come from the environment or the AWS CLI's files, so a manifest holds no secret.
    private mutating func decodeS3(_ entry: YAMLMappingEntry, into s3: inout S3Settings, context: ProblemContext) {
        guard let mapping = entry.value.mapping else {
            problems.error("\(context)'s3' must be a mapping with \(Self.s3Keys.map { "'\($0)'" }.joined(separator: ", ")), found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return
        }
        let inner = context.appending("s3: ")
        checkKeys(mapping, allowed: Self.s3Keys, context: inner)
        let fields = Fields(mapping)
        if let entry = fields["region"], let text = string(entry, context: inner) {
            if !text.isEmpty, text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }) {
                s3.region = text
            } else {
                problems.error("\(inner)'region' must be a region name such as 'us-east-1', found '\(text)'", at: entry.value.location)
            }
        }
        if let entry = fields["endpoint"], let url = templated(entry, context: inner) {
            if let problem = Self.urlProblem(url) {
                problems.error("\(inner)'endpoint': \(problem)", at: entry.value.location)
            } else {
                s3.endpoint = url.resolved
            }
        }
        if let entry = fields["anonymous"], let value = boolean(entry, context: inner) { s3.anonymous = value }
        if let entry = fields["path_style"], let value = boolean(entry, context: inner) { s3.pathStyle = value }
        if let entry = fields["profile"], let text = string(entry, context: inner) { s3.profile = text }
    }

    // MARK: - Keys

    /// A mapping's entries looked up by key. Manifest mappings are small, so a linear scan beats
    /// building a dictionary for each of 100,000 jobs; the YAML layer already removed duplicates.
    struct Fields {
        let entries: [YAMLMappingEntry]
        /// Bit `n` is set when some key is `n` bytes long (keys of 63 bytes or more set bit 63).
        private let lengths: UInt64

        init(_ entries: [YAMLMappingEntry]) {
            self.entries = entries
            lengths = entries.indices.reduce(0) { $0 | Self.lengthBit(entries[$1].key) }
        }

        /// Most lookups are for keys a job does not have (a job is asked for two dozen keys and
        /// has five), and scanning the entries for them was the largest single cost of decoding a
        /// million jobs; a key of a length no entry has is not there.
        subscript(key: String) -> YAMLMappingEntry? {
            guard lengths & Self.lengthBit(key) != 0 else { return nil }
            // By index: binding each entry would retain and release its node's document.
            for index in entries.indices where Self.same(entries[index].key, key) { return entries[index] }
            return nil
        }

        private static func lengthBit(_ key: String) -> UInt64 {
            1 << UInt64(min(key.utf8.count, 63))
        }

        static func same(_ a: String, _ b: String) -> Bool {
            a.utf8.count == b.utf8.count && a == b
        }
    }

    mutating func checkKeys(_ entries: [YAMLMappingEntry], allowed: [String], context: ProblemContext) {
        for index in entries.indices where !allowed.contains(where: { Fields.same($0, entries[index].key) }) {
            let entry = entries[index]
            let hint = Self.placement(of: entry.key, allowed: allowed) ?? Suggestion.hint(for: entry.key, in: allowed)
            problems.error("\(context)unknown key '\(entry.key)'\(hint)", at: entry.keyLocation)
        }
    }

    /// Where a key that is valid elsewhere in a manifest belongs, for a key put in the wrong
    /// mapping (`rate_limit` on a job, `retries` at the top level, `url` under defaults).
    private static func placement(of key: String, allowed: [String]) -> String? {
        if topLevelKeys.contains(key) {
            return " here: '\(key)' is a top-level setting of the manifest (for the whole run); move it there"
        }
        if settingKeys.contains(key) || key == "headers" {
            return " here: '\(key)' is a job setting; put it under 'defaults:' (for every job) or on a job"
        }
        if jobKeys.contains(key) {
            return " here: '\(key)' belongs to a job (an entry of 'jobs:')"
        }
        return nil
    }

    /// `max_duration`, `max_bytes` (a size) and `cutoff: soft|hard` at the top level.
    private mutating func decodeBudget(_ fields: Fields, into budget: inout RunBudget) {
        if let entry = fields["max_duration"], let seconds = duration(entry, context: "") {
            if seconds > 0 {
                budget.maxDuration = seconds
            } else {
                problems.error("'max_duration' must be longer than zero", at: entry.value.location)
            }
        }
        if let entry = fields["max_bytes"], let text = scalarText(entry, context: "", expected: "a size such as 10GiB") {
            switch Self.size(text) {
            case .success(let bytes) where bytes > 0: budget.maxBytes = bytes
            case .success: problems.error("'max_bytes' must be greater than zero", at: entry.value.location)
            case .failure(let problem):
                problems.error(problem.message.replacingOccurrences(of: "'size'", with: "'max_bytes'"), at: entry.value.location)
            }
        }
        if let entry = fields["cutoff"], let text = string(entry, context: "") {
            if let cutoff = RunBudget.Cutoff(rawValue: text) {
                budget.cutoff = cutoff
            } else {
                problems.error("'cutoff' must be soft or hard, found '\(text)'", at: entry.value.location)
            }
        }
    }

    /// `hooks: {on_start|on_success|on_failure|on_finish: [ACTION, …]}`, each action one of
    /// `{command: [PROGRAM, ARG…]}`, `{url: URL, headers: {…}}` or `{ping: URL}`, with an
    /// optional `timeout:`.
    private mutating func decodeHooks(_ entry: YAMLMappingEntry, baseDirectory: String) -> Hooks {
        var hooks = Hooks()
        guard let mapping = entry.value.mapping else {
            problems.error("'hooks' must be a mapping of on_start, on_success, on_failure, on_finish to lists of actions, found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return hooks
        }
        checkKeys(mapping, allowed: Hooks.Event.allCases.map(\.rawValue), context: "hooks: ")
        for item in mapping {
            guard let event = Hooks.Event(rawValue: item.key) else { continue }
            let context = ProblemContext(stringLiteral: "hooks: \(item.key): ")
            guard let list = item.value.sequence else {
                problems.error("\(context)must be a list of actions ({command: [...]}, {url: URL} or {ping: URL}), found \(item.value.kindDescription)",
                               at: item.value.location)
                continue
            }
            hooks.actions[event] = list.compactMap { decodeHookAction($0, context: context, baseDirectory: baseDirectory) }
        }
        return hooks
    }

    private mutating func decodeHookAction(_ node: YAMLNode, context: ProblemContext, baseDirectory: String) -> Hooks.Action? {
        guard let mapping = node.mapping else {
            problems.error("\(context)an action must be a mapping with command, url or ping, found \(node.kindDescription)", at: node.location)
            return nil
        }
        checkKeys(mapping, allowed: ["command", "url", "ping", "headers", "timeout"], context: context)
        let fields = Fields(mapping)
        let kinds = ["command", "url", "ping"].filter { fields[$0] != nil }
        guard kinds.count == 1 else {
            problems.error("\(context)an action needs exactly one of command, url and ping, found \(kinds.isEmpty ? "none" : kinds.joined(separator: " and "))",
                           at: node.location)
            return nil
        }
        if let headers = fields["headers"], fields["url"] == nil {
            problems.error("\(context)'headers' belongs to a url action", at: headers.keyLocation)
        }
        var timeout = Hooks.Action.defaultTimeout
        if let entry = fields["timeout"], let seconds = duration(entry, context: context) {
            if seconds >= 1 { timeout = seconds } else { problems.error("\(context)'timeout' must be at least 1s", at: entry.value.location) }
        }
        if let command = fields["command"] {
            var words: [TemplatedString] = []
            for (word, location) in stringList(command, context: context) {
                if let value = templated(word, at: location, context: context, label: "'command'") { words.append(value) }
            }
            guard let program = words.first, !program.resolved.isEmpty else {
                problems.error("\(context)'command' must name a program: [PROGRAM, ARG…]", at: command.value.location)
                return nil
            }
            // A program with a path is the manifest's, wherever batchfetch runs from; a bare
            // name is looked up in PATH.
            if program.resolved.contains("/"), !program.resolved.hasPrefix("/") {
                let absolute = URL(fileURLWithPath: program.resolved, relativeTo: URL(fileURLWithPath: baseDirectory, isDirectory: true))
                    .standardizedFileURL.path
                words[0] = TemplatedString(literal: absolute)
            }
            return Hooks.Action(kind: .command(words), timeout: timeout)
        }
        let key = kinds[0]
        guard let entry = fields[key], let target = templated(entry, context: context) else { return nil }
        guard let url = URL(string: target.resolved), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            problems.error("\(context)'\(key)' must be an http or https URL, found '\(target.redacted)'", at: entry.value.location)
            return nil
        }
        if key == "ping" { return Hooks.Action(kind: .ping(target), timeout: timeout) }
        let headers = fields["headers"].map { decodeHeaders($0, context: context) } ?? []
        return Hooks.Action(kind: .url(target, headers: headers), timeout: timeout)
    }
}
