import Foundation
import CYAML

/// What the YAML layer made of a file: the document's root node (nil for an empty file) and the
/// problems found, each with a location.
public struct YAMLParseResult: Sendable {
    public var root: YAMLNode?
    public var problems: [(location: SourceLocation, message: String)]
}

/// Builds a ``YAMLNode`` tree from libyaml's parser events.
///
/// libyaml's own loader (`yaml_parser_load`) would accept duplicate keys, expand aliases without
/// limit and forget where scalars were, so we consume the event stream ourselves and enforce the
/// manifest's limits on the way: one document, nesting at most ``maxDepth``, aliases that expand
/// to at most ``aliasBudget`` nodes, valid UTF-8, at most ``maxFileSize`` bytes. Aliases share
/// the anchored subtree instead of copying it, so a "billion laughs" file costs no memory before
/// the budget stops it. YAML 1.1 merge keys (`<<: *defaults`) are honoured; explicit keys win.
public enum YAMLParser {
    public static let maxDepth = 64
    public static let aliasBudget = 1_000_000
    public static let maxFileSize = 64 * 1024 * 1024

    public static func parse(_ bytes: [UInt8]) -> YAMLParseResult {
        if bytes.count > maxFileSize {
            return YAMLParseResult(root: nil, problems: [(.start, fileTooLargeMessage(bytes.count))])
        }
        if let bad = UTF8Check.firstInvalidByte(in: bytes) {
            let location = UTF8Check.location(ofByteOffset: bad, in: bytes)
            let message = "file is not valid UTF-8 (byte 0x\(String(bytes[bad], radix: 16, uppercase: true))); "
                + "manifests must be UTF-8 text"
            return YAMLParseResult(root: nil, problems: [(location, message)])
        }
        var builder = TreeBuilder()
        bytes.withUnsafeBufferPointer { buffer in
            builder.run(buffer, bytes: bytes)
        }
        return YAMLParseResult(root: builder.root, problems: builder.problems)
    }

    static func fileTooLargeMessage(_ size: Int) -> String {
        let mib = Double(size) / 1_048_576
        return "file is \(String(format: "%.1f", mib)) MiB; manifests are limited to 64 MiB"
    }
}

/// The event loop and the stack of collections under construction.
private struct TreeBuilder {
    var root: YAMLNode?
    var problems: [(location: SourceLocation, message: String)] = []
    private var stack: [Frame] = []
    private var anchors: [String: YAMLNode] = [:]
    private var aliasCost = 0
    private var documents = 0

    private enum Frame {
        case sequence(items: [YAMLNode], location: SourceLocation, anchor: String?)
        case mapping(MappingBuilder)
    }

    /// Runs libyaml over the whole buffer; stops at the first fatal problem.
    mutating func run(_ buffer: UnsafeBufferPointer<UInt8>, bytes: [UInt8]) {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            problems.append((.start, "could not initialise the YAML parser"))
            return
        }
        defer { yaml_parser_delete(&parser) }
        yaml_parser_set_input_string(&parser, buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)

        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(&parser, &event) == 1 else {
                problems.append(Self.libyamlProblem(parser, bytes: bytes))
                return
            }
            defer { yaml_event_delete(&event) }
            if event.type == YAML_STREAM_END_EVENT { return }
            if !handle(event) { return }
        }
    }

    /// Handles one event; returns false after a fatal problem.
    private mutating func handle(_ event: yaml_event_t) -> Bool {
        let location = SourceLocation(mark: event.start_mark)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                problems.append((location, "a manifest holds one YAML document; found a second one here"))
                return false
            }
        case YAML_SCALAR_EVENT:
            let data = event.data.scalar
            let scalar = YAMLScalar(
                value: Self.string(data.value, count: data.length),
                style: Self.style(data.style),
                tag: data.tag.map { Self.string($0) }
            )
            let node = YAMLNode(.scalar(scalar), at: location)
            register(anchor: data.anchor, node)
            return add(node)
        case YAML_ALIAS_EVENT:
            let name = Self.string(event.data.alias.anchor)
            guard var node = anchors[name] else {
                problems.append((location, "unknown alias '*\(name)' (no anchor '&\(name)' before it)"))
                return add(YAMLNode(.scalar(YAMLScalar(value: "", style: .plain)), at: location))
            }
            aliasCost += node.weight
            if aliasCost > YAMLParser.aliasBudget || node.weight < 0 {
                problems.append((
                    location,
                    "aliases expand to more than \(YAMLParser.aliasBudget) nodes; refusing to expand further"
                ))
                return false
            }
            node.location = location
            return add(node)
        case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
            if stack.count >= YAMLParser.maxDepth {
                problems.append((location, "nesting deeper than \(YAMLParser.maxDepth) levels"))
                return false
            }
            let anchor = event.type == YAML_SEQUENCE_START_EVENT
                ? event.data.sequence_start.anchor : event.data.mapping_start.anchor
            let name = anchor.map { Self.string($0) }
            if event.type == YAML_SEQUENCE_START_EVENT {
                stack.append(.sequence(items: [], location: location, anchor: name))
            } else {
                stack.append(.mapping(MappingBuilder(location: location, anchor: name)))
            }
        case YAML_SEQUENCE_END_EVENT:
            guard case .sequence(let items, let start, let anchor) = stack.removeLast() else { return false }
            let node = YAMLNode(.sequence(items), at: start)
            if let anchor { anchors[anchor] = node }
            return add(node)
        case YAML_MAPPING_END_EVENT:
            guard case .mapping(let mapping) = stack.removeLast() else { return false }
            let node = YAMLNode(.mapping(mapping.finish()), at: mapping.location)
            if let anchor = mapping.anchor { anchors[anchor] = node }
            return add(node)
        default:
            break
        }
        return true
    }

    private mutating func register(anchor: UnsafeMutablePointer<yaml_char_t>?, _ node: YAMLNode) {
        if let anchor { anchors[Self.string(anchor)] = node }
    }

    /// Places a finished node into its parent, or makes it the root.
    private mutating func add(_ node: YAMLNode) -> Bool {
        guard let top = stack.indices.last else {
            root = node
            return true
        }
        switch stack[top] {
        case .sequence(var items, let location, let anchor):
            stack[top] = .sequence(items: [], location: location, anchor: anchor)
            items.append(node)
            stack[top] = .sequence(items: items, location: location, anchor: anchor)
        case .mapping(var mapping):
            stack[top] = .sequence(items: [], location: .start, anchor: nil)  // release for in-place mutation
            if let problem = mapping.add(node) { problems.append(problem) }
            stack[top] = .mapping(mapping)
        }
        return true
    }

    private static func libyamlProblem(_ parser: yaml_parser_t, bytes: [UInt8]) -> (SourceLocation, String) {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        var message = "YAML syntax error: \(problem)"
        if let context = parser.context.map({ String(cString: $0) }) {
            let at = SourceLocation(mark: parser.context_mark)
            message += " (\(context) at line \(at.line), column \(at.column))"
        }
        if parser.error == YAML_READER_ERROR {
            return (UTF8Check.location(ofByteOffset: parser.problem_offset, in: bytes), message)
        }
        return (SourceLocation(mark: parser.problem_mark), message)
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>, count: Int) -> String {
        String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>) -> String {
        String(cString: UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLScalar.Style {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: return .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: return .literal
        case YAML_FOLDED_SCALAR_STYLE: return .folded
        default: return .plain
        }
    }
}

/// A mapping being read: remembers its keys to reject duplicates, and collects merge-key sources.
private struct MappingBuilder {
    let location: SourceLocation
    let anchor: String?
    private var entries: [YAMLMappingEntry] = []
    private var firstSeen: [String: SourceLocation] = [:]
    private var merged: [YAMLMappingEntry] = []
    private var pendingKey: (key: String, location: SourceLocation, kind: KeyKind)?

    private enum KeyKind { case normal, merge, invalid }

    init(location: SourceLocation, anchor: String?) {
        self.location = location
        self.anchor = anchor
    }

    /// Adds the next key or value; returns a problem if the node is not acceptable there.
    mutating func add(_ node: YAMLNode) -> (SourceLocation, String)? {
        guard let pending = pendingKey else {
            guard let scalar = node.scalar else {
                pendingKey = ("", node.location, .invalid)
                return (node.location, "mapping keys must be scalars, found \(node.kindDescription)")
            }
            let isMerge = scalar.style == .plain && scalar.value == "<<"
            pendingKey = (scalar.value, node.location, isMerge ? .merge : .normal)
            return nil
        }
        pendingKey = nil
        switch pending.kind {
        case .invalid:
            return nil
        case .merge:
            let sources = node.mapping.map { [$0] } ?? node.sequence?.compactMap(\.mapping)
            guard let sources, node.mapping != nil || sources.count == node.sequence?.count else {
                return (node.location, "merge key '<<' expects a mapping or a list of mappings")
            }
            merged.append(contentsOf: sources.joined())
            return nil
        case .normal:
            if let first = firstSeen[pending.key] {
                return (
                    pending.location,
                    "duplicate key '\(pending.key)' (first defined at line \(first.line), column \(first.column))"
                )
            }
            firstSeen[pending.key] = pending.location
            entries.append(YAMLMappingEntry(key: pending.key, keyLocation: pending.location, value: node))
            return nil
        }
    }

    /// The entries in document order, followed by merged entries that no explicit key overrides.
    func finish() -> [YAMLMappingEntry] {
        guard !merged.isEmpty else { return entries }
        var result = entries
        var seen = Set(firstSeen.keys)
        for entry in merged where !seen.contains(entry.key) {
            seen.insert(entry.key)
            result.append(entry)
        }
        return result
    }
}

extension SourceLocation {
    /// libyaml's marks are 0-based and count characters, not bytes.
    init(mark: yaml_mark_t) {
        self.init(line: mark.line + 1, column: mark.column + 1)
    }
}
