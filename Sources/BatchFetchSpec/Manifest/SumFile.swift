import Foundation

/// A checksum list published next to the files it covers (`checksums_from`): GNU coreutils
/// lines (`<hex>  name`, `<hex> *name`) and BSD tagged lines (`SHA256 (name) = <hex>`), mixed
/// freely. Blank lines and `#` comments are skipped; other lines are ignored rather than fatal,
/// since sum files often carry a PGP signature around the list.
package struct SumFile: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var name: String
        package var checksum: Checksum
    }

    package private(set) var entries: [Entry] = []

    package init(text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            if let entry = Self.entry(line) { entries.append(entry) }
        }
    }

    /// One line's entry, GNU or BSD, or nil for any other line.
    package static func entry(_ line: Substring) -> Entry? {
        bsd(line) ?? gnu(line)
    }

    /// Why a file has no checksums in a sum file.
    package enum MatchFailure: Error, Equatable {
        /// No entry names it.
        case notListed
        /// Entries in several directories share its file name, and neither path decides.
        case ambiguous([String])
    }

    /// The checksums (at most one per algorithm, strongest first) of the entry for a file, found
    /// the way `sha256sum -c` is used on mirrors: the entry whose path equals one of `paths`
    /// (the file's path relative to the sum file, most trusted first; a leading `./` ignored),
    /// else the only entry with the file name `fileName`. Entries in different directories with
    /// that file name are ambiguous: guessing could pin the wrong file's digest.
    package func match(paths: [String], fileName: String) -> Result<(name: String, checksums: [Checksum]), MatchFailure> {
        for path in paths {
            let listed = checksums(named: Self.normalised(path))
            if !listed.isEmpty { return .success((Self.normalised(path), listed)) }
        }
        let candidates = Set(entries.map { Self.normalised($0.name) }.filter { ($0 as NSString).lastPathComponent == fileName })
        switch candidates.count {
        case 0: return .failure(.notListed)
        case 1: return .success((candidates.first!, checksums(named: candidates.first!)))
        default: return .failure(.ambiguous(candidates.sorted()))
        }
    }

    /// The checksums of the entries named exactly `name` (normalised), strongest first.
    private func checksums(named name: String) -> [Checksum] {
        var found: [Checksum.Algorithm: Checksum] = [:]
        for entry in entries where Self.normalised(entry.name) == name {
            found[entry.checksum.algorithm] = found[entry.checksum.algorithm] ?? entry.checksum
        }
        return Checksum.Algorithm.allCases.compactMap { found[$0] }
    }

    private static func normalised(_ name: String) -> String {
        name.hasPrefix("./") ? String(name.dropFirst(2)) : name
    }

    /// `<hex>  name` or `<hex> *name`; the algorithm follows from the digest's length.
    private static func gnu(_ line: Substring) -> Entry? {
        guard !line.hasPrefix("#"), let space = line.firstIndex(of: " ") else { return nil }
        let hex = String(line[..<space])
        var rest = line[line.index(after: space)...]
        guard let mode = rest.first, mode == " " || mode == "*" else { return nil }
        rest = rest.dropFirst()
        guard !rest.isEmpty, let algorithm = Checksum.Algorithm.allCases.first(where: { $0.hexLength == hex.utf8.count }),
              case .success(let checksum) = Checksum.parse("\(algorithm.rawValue):\(hex)") else { return nil }
        return Entry(name: String(rest), checksum: checksum)
    }

    /// `SHA256 (name) = <hex>` (also SHA512, SHA1, MD5; `SHA2-256` as some tools write it).
    private static func bsd(_ line: Substring) -> Entry? {
        guard let open = line.range(of: " ("), let close = line.range(of: ") = ", options: .backwards),
              open.upperBound <= close.lowerBound else { return nil }
        let tag = line[..<open.lowerBound].lowercased().replacingOccurrences(of: "sha2-", with: "sha")
            .replacingOccurrences(of: "-", with: "")
        guard let algorithm = Checksum.Algorithm(rawValue: tag),
              case .success(let checksum) = Checksum.parse("\(algorithm.rawValue):\(line[close.upperBound...])") else { return nil }
        return Entry(name: String(line[open.upperBound..<close.lowerBound]), checksum: checksum)
    }
}
