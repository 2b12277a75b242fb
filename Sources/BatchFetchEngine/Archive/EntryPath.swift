import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec

/// Where an archive entry goes inside the tree, or why it must not be written: the pure rules
/// of safe extraction, apart from any I/O (Docs/Archives.md, "Never outside `into`").
///
/// Names are taken apart, never trusted whole: an absolute name, a `..` component, a zip name
/// with `\` (a Windows path that other tools split), or a link whose target leaves the tree makes
/// the entry unsafe — the job fails naming it, rather than skipping it silently, because an
/// archive that holds one was made by someone to be hostile or is broken.
enum EntryPath {
    enum Verdict: Equatable {
        /// Write it at these components (relative to the tree, none empty, no `.` or `..`).
        case write([String])
        /// Left out: `strip_components` left nothing of it, or `include`/`exclude` say so.
        case skip
        /// Refused: the reason, to follow the entry's name in the message.
        case unsafe(String)
    }

    /// The entry's place in the tree, for its raw `name` in an archive of `format`.
    static func place(_ name: String, format: Extract.Format, extract: Extract) -> Verdict {
        let parts: [String]
        switch components(of: name, zip: format == .zip) {
        case .success(let found): parts = found
        case .failure(let reason): return .unsafe(reason.message)
        }
        guard parts.count > extract.stripComponents else { return .skip }
        let kept = Array(parts.dropFirst(extract.stripComponents))
        return extract.keeps(kept.joined(separator: "/")) ? .write(kept) : .skip
    }

    struct Refusal: Error {
        let message: String
    }

    /// The components of a name: `.` and empty ones dropped; absolute names, `..`, and (in a zip)
    /// backslashes refused.
    static func components(of name: String, zip: Bool) -> Result<[String], Refusal> {
        if name.hasPrefix("/") { return .failure(Refusal(message: "is an absolute path")) }
        // The one rule of every path batchfetch writes (``DestPath``): no control character.
        if DestPath.hasControlCharacter(name) {
            return .failure(Refusal(message: "holds a control character (such as a newline) in its name"))
        }
        // libarchive reads a zip name's '\\' as '/' already (as bsdtar and Windows do; unzip
        // on Unix keeps it in the name), so this holds only should that ever change: a name
        // two tools would split differently is refused rather than guessed.
        if zip, name.contains("\\") {
            return .failure(Refusal(message: "holds a '\\' (a Windows path separator, which other tools would follow)"))
        }
        var parts: [String] = []
        for part in name.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            if part == ".." { return .failure(Refusal(message: "climbs out of the tree with '..'")) }
            if part.utf8.count > DestPath.nameMax {
                return .failure(Refusal(message: "has a component longer than \(DestPath.nameMax) bytes"))
            }
            parts.append(String(part))
        }
        if parts.isEmpty, !name.split(separator: "/").isEmpty {
            return .success([])  // "." or "./": the tree itself
        }
        if parts.isEmpty { return .failure(Refusal(message: "has an empty name")) }
        return .success(parts)
    }

    /// Why a symlink at `at` (components in the tree) with `target` could lead outside the tree,
    /// or nil when it cannot. Absolute targets are refused; `..` is allowed only before the
    /// first name (`../../lib/x`) and no further up than the link's own depth: a `..` after a
    /// name could follow a link inside the tree (`a -> .`, then `b -> a/a/../..`) and climb out,
    /// so such targets are refused even where this one would have stayed inside. Every link
    /// kept by this rule resolves inside, whatever other links it goes through.
    static func symlinkProblem(target: String, at path: [String]) -> String? {
        if target.isEmpty { return "is a symbolic link with an empty target" }
        if target.hasPrefix("/") { return "is a symbolic link to an absolute path ('\(target)')" }
        var climbs = 0
        var named = false
        for part in target.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            if part == ".." {
                if named { return "is a symbolic link whose target ('\(target)') goes back up after a name, which another link could turn outside the tree" }
                climbs += 1
            } else {
                named = true
            }
        }
        if climbs > path.count - 1 { return "is a symbolic link that leads out of the tree ('\(target)')" }
        return nil
    }
}
