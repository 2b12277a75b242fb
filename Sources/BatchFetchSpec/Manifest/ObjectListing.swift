/// A job that becomes many: a bucket prefix (`s3://bucket/dir/`, Docs/ObjectStores.md) or a
/// source (`hf://…`, `zenodo:…`, a resolver's URL; Docs/Sources.md). Before a command builds its
/// graph it becomes one job per object or file that `include` and `exclude` keep, each with the
/// id `JOBID/` + its path relative to the prefix (or the source's base) and the dest `DIR/` +
/// that relative path. The job's own `dest` is the directory (written `DIR/` in the manifest,
/// held without the slash).
package struct ObjectListing: Sendable, Hashable {
    /// The source the job's URL names; nil for a bucket prefix.
    package var reference: SourceReference?
    /// Globs on the relative key (`*` within a `/` segment, `**` across them); default all.
    package let include: [Glob]
    package let exclude: [Glob]

    package init(include: [Glob] = [], exclude: [Glob] = [], reference: SourceReference? = nil) {
        self.reference = reference
        self.include = include
        self.exclude = exclude
    }

    /// Whether the object at `relative` (its key after the prefix) is listed.
    package func keeps(_ relative: String) -> Bool {
        (include.isEmpty || include.contains { $0.matches(relative) }) && !exclude.contains { $0.matches(relative) }
    }
}
