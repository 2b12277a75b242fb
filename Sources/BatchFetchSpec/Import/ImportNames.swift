import Foundation

/// Ids and dests for imported jobs: derived from the URL's last segment when the file named
/// none, and made unique (`name`, `name-2`, …) so that a list with two `index.html`s still
/// validates.
package struct ImportNames {
    private var ids: Set<String>
    private var dests: Set<String>

    /// Names already taken (an existing manifest's, for `batchfetch add`).
    package init(takenIDs: some Sequence<String> = [], takenDests: some Sequence<String> = []) {
        ids = Set(takenIDs)
        dests = Set(takenDests)
    }

    /// A job's id (`id`, or one derived from its dest) and its dest (the file's, or the URL's last
    /// segment), each made unique.
    package mutating func named(_ job: ImportedJob, id: String? = nil) -> (id: String, dest: String) {
        let dest = self.dest(job.dest ?? Self.fileName(ofURL: job.urls[0]))
        return (id.map { Self.unique($0, in: &ids, splittingExtension: false) } ?? self.id(for: dest), dest)
    }

    /// Whether `id` is taken.
    package func isTaken(id: String) -> Bool {
        ids.contains(id)
    }

    /// A new id from a dest's file name: characters outside `A-Za-z0-9._-` become `-`.
    package mutating func id(for dest: String) -> String {
        var base = String(Self.lastComponent(dest).map { character -> Character in
            character.isASCII && (character.isLetter || character.isNumber || "._-".contains(character)) ? character : "-"
        })
        while base.hasPrefix("-") || base.hasPrefix(".") { base.removeFirst() }
        if base.isEmpty { base = "job" }
        return Self.unique(base, in: &ids, splittingExtension: false)
    }

    /// `dest` itself when free, else with `-2`, `-3`… before its extension.
    package mutating func dest(_ dest: String) -> String {
        Self.unique(dest, in: &dests, splittingExtension: true)
    }

    /// Whether `dest` is taken (an explicit dest that repeats is a problem, not renamed).
    package func isTaken(dest: String) -> Bool {
        dests.contains(dest)
    }

    private static func unique(_ name: String, in taken: inout Set<String>, splittingExtension: Bool) -> String {
        var candidate = name
        var number = 2
        let (stem, suffix) = splittingExtension ? split(name) : (name, "")
        while taken.contains(candidate) {
            candidate = "\(stem)-\(number)\(suffix)"
            number += 1
        }
        taken.insert(candidate)
        return candidate
    }

    /// `dir/data.tar.gz` → (`dir/data`, `.tar.gz`): the extension of an archive is kept whole.
    private static func split(_ path: String) -> (String, String) {
        let name = lastComponent(path)
        let directory = String(path.dropLast(name.count))
        guard let dot = name.dropFirst().firstIndex(of: ".") else { return (path, "") }
        return (directory + name[..<dot], String(name[dot...]))
    }

    /// A path's last component (without NSString's bridging: a million-line list pays it per job).
    static func lastComponent(_ path: String) -> Substring {
        path.split(separator: "/").last ?? Substring(path)
    }

    /// The last segment of a URL's path, percent-decoded (`index.html` for a path ending in `/`):
    /// what wget and curl -O would name the file.
    package static func fileName(ofURL url: String) -> String {
        var path = url
        if let scheme = path.range(of: "://") { path = String(path[scheme.upperBound...]) }
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<end]) }
        guard let slash = path.firstIndex(of: "/"), !path.hasSuffix("/") else { return "index.html" }
        let last = path[slash...].split(separator: "/").last.map(String.init) ?? ""
        let decoded = last.removingPercentEncoding ?? last
        return decoded.isEmpty || decoded == "." || decoded == ".." || decoded.contains("/") ? "index.html" : decoded
    }

    /// A relative path for a URL: each segment percent-encoded (spaces, `#`, `?`, non-ASCII).
    package static func percentEncodedPath(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#;")
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }.joined(separator: "/")
    }
}
