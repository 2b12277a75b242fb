/// One entry of `jobs_from`: a file of rows, each of which becomes a download job.
///
/// Nobody writes a million jobs in YAML; they have a CSV, an NDJSON export or a list of URLs.
/// A list's rows take the manifest's `defaults` and are jobs like any other once loaded (plan,
/// pin, check, verify, shards, reports); their problems are reported at the list's own
/// `file:line:col` (``SourceLocation/file``).
package struct JobList: Sendable, Equatable {
    /// How the rows are written.
    package enum Format: String, Sendable, CaseIterable {
        /// Comma-separated with a header row (RFC 4180: quotes, doubled quotes, line breaks in
        /// quotes, CRLF, a UTF-8 byte order mark).
        case csv
        /// As csv, separated by tabs.
        case tsv
        /// One JSON object per line (also called JSON Lines).
        case ndjson
        /// One URL per line; blank lines and lines starting with `#` are skipped.
        case lines
    }

    /// The path as written in the manifest, for messages.
    package var file: String
    /// The absolute path (relative paths start at the manifest's directory).
    package var path: String
    /// Nil: `auto`, picked from the extension, then from the content (``ListFormatGuess``).
    package var format: Format?
    /// `id_prefix: P` makes every row's id `P/…`, given or derived.
    package var idPrefix: String?
    /// `dest:` with `{path}` (the URL's path, percent-decoded) and `{name}` (its last segment);
    /// a row's own `dest` wins. Default `{path}`.
    package var destTemplate: String
    /// Where the entry is in the manifest.
    package var location: SourceLocation

    package static let defaultDestTemplate = "{path}"

    package init(file: String, path: String, format: Format? = nil, idPrefix: String? = nil,
                destTemplate: String = Self.defaultDestTemplate, location: SourceLocation = .start) {
        self.file = file
        self.path = path
        self.format = format
        self.idPrefix = idPrefix
        self.destTemplate = destTemplate
        self.location = location
    }
}
