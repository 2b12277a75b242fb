import Foundation

/// The one rule for relative paths inside `output_dir` — a job's `dest`, an `extract.into`, a
/// listing's directory and the paths its files land at, an archive entry's components: relative,
/// normalised, never climbing out, no control character (NUL, a newline or an escape in a name
/// would forge log lines and confuse every tool that reads a listing; the same refusal wherever
/// a name comes from), no component longer than a file system takes. A path that names a
/// directory may be written with its trailing `/` (``Kind/directory``); one that names a file may
/// not.
package enum DestPath {
    /// What a path names: a file (`dest`), or a directory (`extract.into`, a listing's `dest`).
    package enum Kind: Sendable {
        case file, directory
    }

    /// Suffix of the partial download beside a destination (`<dest>.part`).
    package static let partSuffix = ".part"
    /// The longest file name (in bytes) Linux and macOS file systems accept.
    package static let nameMax = 255

    package enum Problem: Error, Equatable {
        case empty
        case absolute
        case escapes
        case directory
        /// NUL or another control character: a newline in a name would forge log lines.
        case invalidCharacter
        /// A component longer than ``nameMax`` bytes.
        case nameTooLong

        /// What is wrong with `shown`, the value of `key` as it may be printed.
        package func message(key: String, shown: String) -> String {
            switch self {
            case .empty: return "'\(key)' is empty"
            case .absolute: return "\(key) '\(shown)' is an absolute path; \(key) is relative to output_dir"
            case .escapes: return "\(key) '\(shown)' escapes output_dir through '..'"
            case .directory: return "\(key) '\(shown)' ends with '/'; \(key) names a file"
            case .invalidCharacter:
                return "\(key) '\(shown.debugDescription.dropFirst().dropLast())' contains a control character (such as NUL or a newline)"
            case .nameTooLong:
                return "\(key) '\(shown)' has a component longer than \(DestPath.nameMax) bytes, which no file system accepts"
            }
        }
    }

    /// Normalises `a/./b//c` to `a/b/c`; rejects paths that are absolute, climb out with `..`,
    /// hold control characters, or have a component no file system accepts. A directory's
    /// trailing `/` is dropped; a file's is refused.
    package static func normalize(_ path: String, as kind: Kind = .file) -> Result<String, Problem> {
        if path.isEmpty { return .failure(.empty) }
        if hasControlCharacter(path) { return .failure(.invalidCharacter) }
        if path.hasPrefix("/") { return .failure(.absolute) }
        if path.hasSuffix("/") {
            guard kind == .directory else { return .failure(.directory) }
            return normalize(String(path.dropLast()), as: .directory)
        }
        if isNormal(path) { return .success(path) }
        if path.split(separator: "/").contains(where: { $0.utf8.count > nameMax }) { return .failure(.nameTooLong) }
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".":
                continue
            case "..":
                if components.popLast() == nil { return .failure(.escapes) }
            default:
                components.append(component)
            }
        }
        if components.isEmpty { return .failure(.empty) }
        return .success(components.joined(separator: "/"))
    }

    /// The last path segment as written (not decoded), without query and fragment.
    package static func rawLastSegment(ofURL url: String) -> String? {
        let bytes = url.utf8
        guard let path = pathBounds(ofURL: url), let slash = bytes[path].lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return String(url[bytes.index(after: slash)..<path.upperBound])
    }

    /// A URL's path, percent-decoded, without its leading `/`, query and fragment: the default
    /// dest of a job list's row. Nil when the URL has no path.
    package static func decodedPath(ofURL url: String) -> String? {
        guard let path = pathBounds(ofURL: url) else { return nil }
        let raw = url[url.utf8.index(after: path.lowerBound)..<path.upperBound]
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return String(raw) }
        return raw.removingPercentEncoding ?? String(raw)
    }

    /// Where a URL's path is: from the first `/` after the authority (which follows the first
    /// `://`) to the query, the fragment or the end; nil when it has none.
    ///
    /// Scanned as bytes (the delimiters are ASCII, which UTF-8 never uses inside a character):
    /// the scan by characters was a tenth of loading a 20,000-job manifest, and Foundation's
    /// `range(of:)` a tenth of validating a million-row list.
    private static func pathBounds(ofURL url: String) -> Range<String.Index>? {
        let bytes = url.utf8
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        var index = bytes.startIndex
        var slashes = 0
        while index < end {
            let byte = bytes[index]
            switch slashes {
            case 0: slashes = byte == UInt8(ascii: ":") ? 1 : 0
            case 1, 2: slashes = byte == UInt8(ascii: "/") ? slashes + 1 : (byte == UInt8(ascii: ":") ? 1 : 0)
            default: if byte == UInt8(ascii: "/") { return index..<end }
            }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// True when no component is empty, only dots or longer than ``nameMax``: the common case,
    /// checked in one pass without copying (a million-job manifest normalises every dest).
    /// (Conservative: `...` takes the slow path, which keeps it.)
    private static func isNormal(_ path: String) -> Bool {
        var componentLength = 0
        var dots = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "/") {
                if componentLength == 0 || componentLength == dots { return false }
                componentLength = 0
                dots = 0
            } else {
                componentLength += 1
                if componentLength > nameMax { return false }
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return componentLength > 0 && componentLength != dots
    }

    /// The file name a URL names: its last path segment, percent-decoded; nil when it has none.
    package static func lastSegment(ofURL url: String) -> String? {
        guard let segment = rawLastSegment(ofURL: url) else { return nil }
        let decoded = segment.utf8.contains(UInt8(ascii: "%")) ? segment.removingPercentEncoding ?? segment : segment
        if decoded.isEmpty || decoded == "." || decoded == ".." || decoded.utf8.contains(UInt8(ascii: "/")) { return nil }
        return decoded
    }

    /// C0 controls (NUL, newline, escape…), DEL and C1 controls (U+0080–U+009F, which UTF-8
    /// writes as 0xC2 0x80–0x9F), found in the bytes without decoding characters.
    package static func hasControlCharacter(_ text: String) -> Bool {
        var afterC2 = false
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F || (afterC2 && byte <= 0x9F && byte >= 0x80) { return true }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// The name of the partial beside a file named `name`: `<name>.part`, or — when the
    /// sidecar's name (`<name>.part.json`) would pass ``nameMax`` — the name cut short on a
    /// character boundary plus a hash of the whole name, so every temporary name fits and stays
    /// the same from run to run (a resume finds it).
    package static func partName(for name: String) -> String {
        fitted(name, reserving: ".part.json".utf8.count) + partSuffix
    }

    /// The sidecar's name beside a file named `name`.
    package static func sidecarName(for name: String) -> String {
        partName(for: name) + ".json"
    }

    /// The partial's and the sidecar's paths beside the file at `path` (same directory).
    package static func temporaryPaths(beside path: String) -> (part: String, sidecar: String) {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let directory = path[..<slash], name = String(path[slash...])
        return (directory + partName(for: name), directory + sidecarName(for: name))
    }

    /// A hidden temporary name for an atomic replacement of `name`, fitting ``nameMax``.
    package static func temporaryName(for name: String, tag: String) -> String {
        "." + fitted(name, reserving: tag.utf8.count + 6) + "." + tag + ".tmp"
    }

    /// `name`, or its first bytes plus `~` and a hash of it, so that `reserving` more bytes fit.
    private static func fitted(_ name: String, reserving suffix: Int) -> String {
        guard name.utf8.count + suffix > nameMax else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across runs and platforms
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let tag = "~" + String(hash, radix: 16)
        let budget = nameMax - suffix - 17
        var kept = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            if bytes + size > budget { break }
            kept.append(character)
            bytes += size
        }
        return kept + tag
    }
}
