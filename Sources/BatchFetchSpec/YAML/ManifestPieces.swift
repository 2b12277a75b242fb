import Foundation

/// Where a large manifest can be cut so that its pieces parse and decode on separate cores.
///
/// A million-job manifest takes libyaml alone about 5 s to scan, and decoding costs more than
/// that; one core cannot validate it in the 10 s the scale goal allows (Docs/Contracts.md §7).
/// A piece is the manifest's header — every byte up to and including the top-level `jobs:` line —
/// followed by a run of whole job items, so each piece is a manifest of its own that parses and
/// decodes with the ordinary code, and its lines map back to the file's by a fixed offset.
///
/// Cuts are made only where YAML's block syntax leaves no doubt: at a line that starts with `- `
/// at the indentation of the first job item, and only when `jobs:` is the last top-level key (no
/// line after it starts in column 0). Such a line begins a new item of `jobs` unless it lies
/// inside a multi-line quoted scalar or flow collection; then the piece before the cut ends with
/// that scalar or collection unclosed, libyaml reports an error, and the caller parses the file in
/// one piece instead. Anything else unusual (a quoted `"jobs":`, a flow-style job list, a second
/// document) finds no cut.
struct ManifestPieces: Equatable {
    /// One piece's job items: their bytes and the 1-based line their first byte is on.
    struct Part: Equatable {
        var range: Range<Int>
        var firstLine: Int
    }

    /// The header is `bytes[0..<headerEnd]`, through the newline of the `jobs:` line.
    var headerEnd: Int
    /// Lines in the header (the line number of `jobs:`).
    var headerLines: Int
    /// At least two, in file order, together covering `headerEnd..<bytes.count`.
    var parts: [Part]

    /// Cuts `bytes` into at most `count` pieces of about equal size; nil when the file cannot be
    /// cut safely or would give one piece only.
    static func find(in bytes: UnsafeBufferPointer<UInt8>, count: Int) -> ManifestPieces? {
        guard count >= 2, let base = bytes.baseAddress, !hasOtherLineBreaks(bytes) else { return nil }
        let size = bytes.count
        var lineStart = 0
        var line = 1
        var header: (end: Int, lines: Int)?
        var indent: Int?
        var cuts: [Part] = []
        while lineStart < size {
            let newline = memchr(base + lineStart, Int32(UInt8(ascii: "\n")), size - lineStart)
            let lineEnd = newline.map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? size
            defer {
                lineStart = lineEnd + 1
                line += 1
            }
            guard let (headerEnd, _) = header else {
                if isJobsKey(bytes, lineStart, lineEnd) { header = (min(lineEnd + 1, size), line) }
                continue
            }
            let spaces = leadingSpaces(bytes, lineStart, lineEnd)
            let first = lineStart + spaces
            if first == lineEnd || bytes[first] == UInt8(ascii: "#") || bytes[first] == UInt8(ascii: "\r") { continue }
            let isItem = isItemStart(bytes, first, lineEnd)
            guard let itemIndent = indent else {
                // The first content after `jobs:` must be a block sequence's first item.
                guard isItem else { return nil }
                indent = spaces
                continue
            }
            // Something other than an item in column 0 (another top-level key, `---`, a tab)
            // would belong to no piece.
            if spaces == 0 && !(itemIndent == 0 && isItem) { return nil }
            guard isItem && spaces == itemIndent else { continue }
            let regionSize = size - headerEnd
            let target = headerEnd + regionSize * (cuts.count + 1) / count
            if lineStart >= target && cuts.count < count - 1 {
                cuts.append(Part(range: lineStart..<lineStart, firstLine: line))
            }
        }
        guard let (headerEnd, headerLines) = header, indent != nil, !cuts.isEmpty else { return nil }
        var parts = [Part(range: headerEnd..<headerEnd, firstLine: headerLines + 1)] + cuts
        for index in parts.indices {
            let end = index + 1 < parts.count ? parts[index + 1].range.lowerBound : size
            parts[index].range = parts[index].range.lowerBound..<end
        }
        return ManifestPieces(headerEnd: headerEnd, headerLines: headerLines, parts: parts)
    }

    /// Whether a line ends other than with `\n` or `\r\n`: YAML 1.1, and libyaml, also break
    /// lines at a lone carriage return and at NEL, LS and PS, which this scanner does not count
    /// (the fuzzer found a run of carriage returns that made a piece read a job's key as a
    /// top-level one). Such a file is parsed whole.
    private static func hasOtherLineBreaks(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let base = bytes.baseAddress!
        func occurrences(of byte: UInt8, where isBreak: (Int) -> Bool) -> Bool {
            var start = 0
            while start < bytes.count, let found = memchr(base + start, Int32(byte), bytes.count - start) {
                let index = UnsafeRawPointer(found) - UnsafeRawPointer(base)
                if isBreak(index) { return true }
                start = index + 1
            }
            return false
        }
        func byte(_ index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }
        return occurrences(of: 0x0D) { byte($0 + 1) != 0x0A }  // a carriage return not before "\n"
            || occurrences(of: 0xC2) { byte($0 + 1) == 0x85 }  // NEL
            || occurrences(of: 0xE2) { byte($0 + 1) == 0x80 && (byte($0 + 2) == 0xA8 || byte($0 + 2) == 0xA9) }  // LS, PS
    }

    /// `jobs:` in column 0, then nothing but spaces, a comment or a carriage return.
    private static func isJobsKey(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        let key = Array("jobs:".utf8)
        guard end - start >= key.count, (0..<key.count).allSatisfy({ bytes[start + $0] == key[$0] }) else { return false }
        var index = start + key.count
        while index < end && bytes[index] == UInt8(ascii: " ") { index += 1 }
        return index == end || bytes[index] == UInt8(ascii: "#") || (bytes[index] == UInt8(ascii: "\r") && index + 1 == end)
    }

    private static func leadingSpaces(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        var index = start
        while index < end && bytes[index] == UInt8(ascii: " ") { index += 1 }
        return index - start
    }

    /// `-` followed by a space, a carriage return or the end of the line: a block sequence entry.
    private static func isItemStart(_ bytes: UnsafeBufferPointer<UInt8>, _ first: Int, _ end: Int) -> Bool {
        guard bytes[first] == UInt8(ascii: "-") else { return false }
        return first + 1 == end || bytes[first + 1] == UInt8(ascii: " ") || bytes[first + 1] == UInt8(ascii: "\r")
    }
}
