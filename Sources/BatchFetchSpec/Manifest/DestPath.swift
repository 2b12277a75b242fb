import Foundation

/// Rules for destination paths: relative, normalised, and never outside `output_dir`.
public enum DestPath {
    /// Suffix of the partial download beside a destination (`<dest>.part`).
    public static let partSuffix = ".part"

    public enum Problem: Error, Equatable {
        case empty
        case absolute
        case escapes
        case directory
        case invalidCharacter
    }

    /// Normalises `a/./b//c` to `a/b/c`; rejects paths that are absolute or climb out with `..`.
    public static func normalize(_ path: String) -> Result<String, Problem> {
        if path.isEmpty { return .failure(.empty) }
        if path.utf8.contains(0) { return .failure(.invalidCharacter) }
        if path.hasPrefix("/") { return .failure(.absolute) }
        if path.hasSuffix("/") { return .failure(.directory) }
        if isNormal(path) { return .success(path) }
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
    public static func rawLastSegment(ofURL url: String) -> String? {
        var text = Substring(url)
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        guard let schemeEnd = text.firstRange(of: "://") else { return nil }
        let afterAuthority = text[schemeEnd.upperBound...]
        guard let pathStart = afterAuthority.firstIndex(of: "/") else { return nil }
        let path = afterAuthority[pathStart...]
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[path.index(after: slash)...])
    }

    /// True when no component is empty or only dots: the common case, checked without copying.
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
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return componentLength > 0 && componentLength != dots
    }

    /// The file name a URL names: its last path segment, percent-decoded; nil when it has none.
    public static func lastSegment(ofURL url: String) -> String? {
        guard let segment = rawLastSegment(ofURL: url) else { return nil }
        let decoded = segment.removingPercentEncoding ?? segment
        if decoded.isEmpty || decoded == "." || decoded == ".." || decoded.utf8.contains(UInt8(ascii: "/")) { return nil }
        return decoded
    }
}
