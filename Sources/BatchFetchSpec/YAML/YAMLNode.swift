/// A parsed YAML document, stored flat: one small record per node, scalar text in one byte
/// buffer, child lists in one index array.
///
/// A manifest of 100,000 jobs has about 1.5 million nodes; as a tree of Swift values with a
/// `String` each, that cost several hundred MiB and most of the load time in allocations. Flat
/// storage keeps it to about 24 bytes per node plus the text. ``YAMLNode`` is the view the
/// decoder works with.
package final class YAMLDocument: Sendable {
    enum Kind: UInt8 {
        case scalar, sequence, mapping, alias
    }

    struct Record {
        var kind: Kind
        var style: YAMLScalar.Style
        var line: UInt32
        var column: UInt32
        /// Scalar: offset into `text`. Sequence, mapping: offset into `children`. Alias: target.
        var start: UInt32
        /// Scalar: byte count. Sequence: item count. Mapping: entry count (two children each).
        var count: UInt32
    }

    let records: [Record]
    let text: [UInt8]
    let children: [UInt32]
    let rootIndex: Int?

    init(records: [Record], text: [UInt8], children: [UInt32], rootIndex: Int?) {
        self.records = records
        self.text = text
        self.children = children
        self.rootIndex = rootIndex
    }

    package var root: YAMLNode? { rootIndex.map { YAMLNode(document: self, index: $0) } }
}

/// A node of a ``YAMLDocument``: scalars stay text, and every node knows where it started so
/// that each problem can name its line and column.
///
/// Scalars are not resolved to numbers or booleans here: the decoder knows which type each key
/// wants, which gives better messages than YAML 1.1's implicit typing (`no` is not `false` to us).
package struct YAMLNode: Sendable {
    let document: YAMLDocument
    let index: Int

    /// Where the node was written (for an alias: where the alias was written).
    package var location: SourceLocation {
        let record = document.records[index]
        return SourceLocation(line: Int(record.line), column: Int(record.column))
    }

    /// The record holding the content: the node's own, or its anchor's for an alias.
    private var content: YAMLDocument.Record {
        let record = document.records[index]
        return record.kind == .alias ? document.records[Int(record.start)] : record
    }

    package var scalar: YAMLScalar? {
        let record = content
        guard record.kind == .scalar else { return nil }
        let start = Int(record.start)
        let value = document.text.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0[start..<start + Int(record.count)]), as: UTF8.self)
        }
        return YAMLScalar(value: value, style: record.style)
    }

    package var sequence: [YAMLNode]? {
        let record = content
        guard record.kind == .sequence else { return nil }
        let start = Int(record.start)
        return (start..<start + Int(record.count)).map { YAMLNode(document: document, index: Int(document.children[$0])) }
    }

    package var mapping: [YAMLMappingEntry]? {
        let record = content
        guard record.kind == .mapping else { return nil }
        let start = Int(record.start)
        return (0..<Int(record.count)).map { entry in
            let key = YAMLNode(document: document, index: Int(document.children[start + 2 * entry]))
            let value = YAMLNode(document: document, index: Int(document.children[start + 2 * entry + 1]))
            return YAMLMappingEntry(key: key.scalar?.value ?? "", keyLocation: key.location, value: value)
        }
    }

    /// True for `~`, `null` and an empty plain scalar, which YAML reads as "no value".
    package var isNull: Bool {
        let record = content
        guard record.kind == .scalar, record.style == .plain else { return false }
        if record.count == 0 { return true }
        guard record.count <= 4 else { return false }
        let value = scalar?.value
        return value == "~" || value == "null" || value == "Null" || value == "NULL"
    }

    /// A short name of the node's shape for "expected X, found Y" messages.
    package var kindDescription: String {
        switch content.kind {
        case .scalar, .alias: return isNull ? "null" : "a scalar"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }
}

/// A scalar's text and how it was written; quoting matters when deciding whether `8` is a number.
package struct YAMLScalar: Sendable, Hashable {
    package enum Style: UInt8, Sendable, Hashable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    package var value: String
    package var style: Style

    package init(value: String, style: Style) {
        self.value = value
        self.style = style
    }
}

/// One `key: value` pair. Keys are always scalars in a manifest; the parser rejects others.
package struct YAMLMappingEntry: Sendable {
    package var key: String
    package var keyLocation: SourceLocation
    package var value: YAMLNode

    package init(key: String, keyLocation: SourceLocation, value: YAMLNode) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }
}
