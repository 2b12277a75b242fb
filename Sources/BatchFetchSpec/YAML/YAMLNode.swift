/// A YAML node as the manifest decoder sees it: scalars stay text, and every node keeps where it
/// started so that each problem can name its line and column.
///
/// Scalars are not resolved to numbers or booleans here: the decoder knows which type each key
/// wants, which gives better messages than YAML 1.1's implicit typing (`no` is not `false` to us).
public struct YAMLNode: Sendable {
    public enum Kind: Sendable {
        case scalar(YAMLScalar)
        case sequence([YAMLNode])
        case mapping([YAMLMappingEntry])
    }

    public var kind: Kind
    public var location: SourceLocation
    /// Number of nodes in this subtree, counting shared (aliased) subtrees each time they occur.
    /// Drives the alias-expansion budget without expanding anything.
    public var weight: Int

    public init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
        switch kind {
        case .scalar:
            weight = 1
        case .sequence(let items):
            weight = items.reduce(1) { $0.addingReportingOverflow($1.weight).partialValue }
        case .mapping(let entries):
            weight = entries.reduce(1) { $0.addingReportingOverflow($1.value.weight + 1).partialValue }
        }
    }

    public var scalar: YAMLScalar? {
        if case .scalar(let scalar) = kind { return scalar }
        return nil
    }

    public var sequence: [YAMLNode]? {
        if case .sequence(let items) = kind { return items }
        return nil
    }

    public var mapping: [YAMLMappingEntry]? {
        if case .mapping(let entries) = kind { return entries }
        return nil
    }

    /// True for `~`, `null` and an empty plain scalar, which YAML reads as "no value".
    public var isNull: Bool {
        guard let scalar, scalar.style == .plain else { return false }
        return scalar.value.isEmpty || scalar.value == "~" || scalar.value == "null" || scalar.value == "Null"
            || scalar.value == "NULL"
    }

    /// A short name of the node's shape for "expected X, found Y" messages.
    public var kindDescription: String {
        switch kind {
        case .scalar: return isNull ? "null" : "a scalar"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }
}

/// A scalar's text and how it was written; quoting matters when deciding whether `8` is a number.
public struct YAMLScalar: Sendable, Hashable {
    public enum Style: Sendable, Hashable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    public var value: String
    public var style: Style
    /// An explicit tag such as `!!str`, if the author wrote one.
    public var tag: String?

    public init(value: String, style: Style, tag: String? = nil) {
        self.value = value
        self.style = style
        self.tag = tag
    }
}

/// One `key: value` pair. Keys are always scalars in a manifest; the parser rejects others.
public struct YAMLMappingEntry: Sendable {
    public var key: String
    public var keyLocation: SourceLocation
    public var value: YAMLNode

    public init(key: String, keyLocation: SourceLocation, value: YAMLNode) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }
}
