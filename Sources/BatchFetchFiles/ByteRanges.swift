/// A set of byte offsets kept as sorted, disjoint, non-adjacent half-open ranges: which parts of a
/// segmented `.part` are written (and recorded in its sidecar as `ranges_done`).
package struct ByteRanges: Sendable, Equatable, Codable {
    package private(set) var ranges: [Range<Int64>]

    package init(_ ranges: [Range<Int64>] = []) {
        self.ranges = []
        for range in ranges { insert(range) }
    }

    /// Adds a range, merging it with any it overlaps or touches.
    package mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var merged = range
        var kept: [Range<Int64>] = []
        kept.reserveCapacity(ranges.count + 1)
        var placed = false
        for existing in ranges {
            if existing.upperBound < merged.lowerBound {
                kept.append(existing)
            } else if existing.lowerBound > merged.upperBound {
                if !placed {
                    kept.append(merged)
                    placed = true
                }
                kept.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)..<max(existing.upperBound, merged.upperBound)
            }
        }
        if !placed { kept.append(merged) }
        ranges = kept
    }

    /// Removes a range (the bytes are no longer claimed).
    package mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        ranges = ranges.flatMap { existing -> [Range<Int64>] in
            guard existing.overlaps(range) else { return [existing] }
            var pieces: [Range<Int64>] = []
            if existing.lowerBound < range.lowerBound { pieces.append(existing.lowerBound..<range.lowerBound) }
            if range.upperBound < existing.upperBound { pieces.append(range.upperBound..<existing.upperBound) }
            return pieces
        }
    }

    /// Ranges clipped to `0..<limit`.
    package func clipped(to limit: Int64) -> ByteRanges {
        ByteRanges(ranges.compactMap { $0.lowerBound < limit ? $0.lowerBound..<min($0.upperBound, limit) : nil })
    }

    /// How far the set covers every byte from 0: the end of a range starting at 0, else 0.
    package var prefix: Int64 {
        ranges.first.map { $0.lowerBound == 0 ? $0.upperBound : 0 } ?? 0
    }

    /// Total bytes covered.
    package var count: Int64 {
        ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }
    }

    /// The first byte at or after `offset` not in the set, and the length of the gap there
    /// (up to `limit`); nil when everything from `offset` to `limit` is covered.
    package func firstGap(from offset: Int64 = 0, before limit: Int64) -> Range<Int64>? {
        var start = offset
        for range in ranges where range.upperBound > start {
            if range.lowerBound > start { return start..<min(range.lowerBound, limit) }
            start = range.upperBound
            if start >= limit { return nil }
        }
        return start < limit ? start..<limit : nil
    }

    /// The first range of the set that shares a byte with `range`.
    package func firstOverlap(with range: Range<Int64>) -> Range<Int64>? {
        ranges.first { $0.overlaps(range) }
    }

    package func union(_ other: ByteRanges) -> ByteRanges {
        var result = self
        for range in other.ranges { result.insert(range) }
        return result
    }

    // In the sidecar: `[[start, end], ...]`, end exclusive.
    package init(from decoder: any Decoder) throws {
        let pairs = try [[Int64]](from: decoder)
        self.init(try pairs.map { pair in
            guard pair.count == 2, pair[0] >= 0, pair[0] <= pair[1] else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a [start, end] pair"))
            }
            return pair[0]..<pair[1]
        })
    }

    package func encode(to encoder: any Encoder) throws {
        try ranges.map { [$0.lowerBound, $0.upperBound] }.encode(to: encoder)
    }
}
