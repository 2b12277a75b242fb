/// `extract:` of a download job: unpack the archive once it verified, into a tree beneath the
/// output directory (Docs/Archives.md). A class, so that the jobs without it — nearly all of a
/// large manifest — pay one pointer in their shared extras.
package final class Extract: Sendable {
    /// What the archive is. `auto` finds it from the bytes (libarchive's bidding), never from the
    /// name; a named format is required to be that one.
    package enum Format: String, Sendable, CaseIterable {
        case auto, tar
        case tarGz = "tar.gz", tarBz2 = "tar.bz2", tarXz = "tar.xz", tarZst = "tar.zst"
        case zip
        case gz, bz2, xz, zst

        /// One compressed file rather than an archive: `into` is then the output file.
        package var isSingleFile: Bool {
            [.gz, .bz2, .xz, .zst].contains(self)
        }
    }

    /// Where the tree (or, for a single compressed file, the file) goes, relative to the output
    /// directory, normalised like a dest.
    package let into: TemplatedString
    /// Where `into` was written, or the `extract` key when it was derived from `dest`.
    package let intoLocation: SourceLocation
    package let format: Format
    /// Leading path components dropped from every entry; an entry with no more is skipped.
    package let stripComponents: Int
    /// Entries kept (after stripping): all when empty.
    package let include: [Glob]
    package let exclude: [Glob]
    /// False: `dest` is removed once the tree is in place (the state remembers the tree).
    package let keepArchive: Bool
    /// Cap on the bytes written; nil: 100 × the archive, at least ``defaultMinimumMaxSize``.
    package let maxSize: Int64?
    package let maxEntries: Int

    package static let defaultMinimumMaxSize: Int64 = 1 << 30
    package static let defaultMaxEntries = 10_000_000

    package init(into: TemplatedString, intoLocation: SourceLocation = .start, format: Format = .auto, stripComponents: Int = 0,
                include: [Glob] = [], exclude: [Glob] = [], keepArchive: Bool = true, maxSize: Int64? = nil,
                maxEntries: Int = Extract.defaultMaxEntries) {
        self.into = into
        self.intoLocation = intoLocation
        self.format = format
        self.stripComponents = stripComponents
        self.include = include
        self.exclude = exclude
        self.keepArchive = keepArchive
        self.maxSize = maxSize
        self.maxEntries = maxEntries
    }

    /// The cap on bytes written for an archive of `archiveSize` bytes.
    package func sizeCap(archiveSize: Int64) -> Int64 {
        maxSize ?? max(Self.defaultMinimumMaxSize, archiveSize.multipliedReportingOverflow(by: 100).partialValue)
    }

    /// Whether an entry at `path` (after stripping) is kept by `include` and `exclude`.
    package func keeps(_ path: String) -> Bool {
        (include.isEmpty || include.contains { $0.matches(path) }) && !exclude.contains { $0.matches(path) }
    }

    /// What the tree depends on besides the archive's bytes: a tree recorded under other
    /// settings is unpacked again. One line, stable across runs and versions.
    package var settingsKey: String {
        var parts = ["format=\(format.rawValue)", "strip=\(stripComponents)"]
        parts += include.map { "include=\($0.pattern)" }
        parts += exclude.map { "exclude=\($0.pattern)" }
        return parts.joined(separator: "\u{1F}")
    }

    /// Archive suffixes a default `into` drops from `dest` (longest first), with the single-file
    /// ones last: `val.tar.gz` → `val`, `notes.txt.gz` → `notes.txt`.
    static let archiveSuffixes = [
        ".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tgz", ".tbz2", ".tbz", ".txz", ".tzst", ".tar", ".zip",
        ".gz", ".bz2", ".xz", ".zst",
    ]

    /// The default `into` for an archive at `dest`: `dest` without its archive suffix; nil when
    /// it has none (then `into` must be given).
    package static func defaultInto(forDest dest: String) -> String? {
        for suffix in archiveSuffixes where dest.count > suffix.count && dest.lowercased().hasSuffix(suffix) {
            let stem = String(dest.dropLast(suffix.count))
            if !stem.hasSuffix("/") { return stem }
        }
        return nil
    }
}
