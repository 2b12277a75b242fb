import Foundation
import CYAML

/// What the YAML layer made of a file: the document's root node (nil for an empty file) and the
/// problems found, each with a location.
package struct YAMLParseResult: Sendable {
    package var root: YAMLNode?
    package var problems: [(location: SourceLocation, message: String)]
    /// Nodes and bytes of scalar text that aliases expanded to: the pieces of one file
    /// (``ManifestPieces``) are held to the budget together.
    var aliasCost = 0
    var aliasBytes = 0
    /// A piece's job items redefined an anchor of the header, so an alias after it could mean
    /// another node than in the whole file; such a file is parsed whole.
    var redefinesHeaderAnchor = false
}

/// Builds a ``YAMLNode`` tree from libyaml's parser events.
///
/// libyaml's own loader (`yaml_parser_load`) would accept duplicate keys, expand aliases without
/// limit and forget where scalars were, so we consume the event stream ourselves and enforce the
/// manifest's limits on the way: one document, nesting at most ``maxDepth``, aliases that expand
/// to at most ``aliasBudget`` nodes and ``aliasByteBudget`` bytes of scalar text (one 1 MiB scalar
/// aliased 600 times took 21 s and 632 MiB to decode before the byte bound), valid UTF-8, at most ``maxFileSize`` bytes. Aliases share
/// the anchored subtree instead of copying it, so a "billion laughs" file costs no memory before
/// the budget stops it. Nodes are stored flat (see ``YAMLDocument``). YAML 1.1 merge keys (`<<: *defaults`) are honoured; explicit keys win.
package enum YAMLParser {
    package static let maxDepth = 64
    package static let aliasBudget = 1_000_000
    package static let aliasByteBudget = 16 * 1024 * 1024
    /// Room for a 1,000,000-job manifest with mirrors and checksums (about 300 MiB of YAML; the
    /// 64 MiB of earlier versions held about 200,000 jobs), while a runaway file is still refused
    /// before it is read into memory.
    package static let maxFileSize = 512 * 1024 * 1024

    package static func parse(_ bytes: [UInt8]) -> YAMLParseResult {
        if let problem = precheck(bytes) { return YAMLParseResult(root: nil, problems: [problem]) }
        return parseChecked(bytes)
    }

    /// ``parse(_:)`` of bytes that passed ``precheck(_:)``.
    static func parseChecked(_ bytes: [UInt8]) -> YAMLParseResult {
        bytes.withUnsafeBufferPointer { buffer in
            var builder = TreeBuilder(lines: .identity)
            builder.run(StreamInput(header: UnsafeBufferPointer(start: nil, count: 0), body: buffer), bytes: bytes)
            return builder.result
        }
    }

    /// Parses one piece of a file cut by ``ManifestPieces``: the header, then the part's job
    /// items, with every location given as a line of the whole file. Call ``precheck(_:)`` on the
    /// whole file first.
    static func parse(
        part: ManifestPieces.Part, of pieces: ManifestPieces, in bytes: UnsafeBufferPointer<UInt8>
    ) -> YAMLParseResult {
        var builder = TreeBuilder(lines: LineMap(headerLines: pieces.headerLines, offset: part.firstLine - pieces.headerLines - 1))
        let header = UnsafeBufferPointer(rebasing: bytes[0..<pieces.headerEnd])
        builder.run(StreamInput(header: header, body: UnsafeBufferPointer(rebasing: bytes[part.range])), bytes: nil)
        return builder.result
    }

    /// The problem that stops a file before parsing: too large, or not UTF-8.
    static func precheck(_ bytes: [UInt8]) -> (location: SourceLocation, message: String)? {
        if bytes.count > maxFileSize {
            return (.start, fileTooLargeMessage(bytes.count))
        }
        if let bad = UTF8Check.firstInvalidByte(in: bytes) {
            let location = UTF8Check.location(ofByteOffset: bad, in: bytes)
            let message = "file is not valid UTF-8 (byte 0x\(String(bytes[bad], radix: 16, uppercase: true))); "
                + "manifests must be UTF-8 text"
            return (location, message)
        }
        return nil
    }

    static func fileTooLargeMessage(_ size: Int) -> String {
        let mib = Double(size) / 1_048_576
        return "file is \(String(format: "%.1f", mib)) MiB; manifests are limited to \(maxFileSize >> 20) MiB"
    }
}

/// How a parsed stream's lines map to the file's: lines after the header (the job items of one
/// piece) are moved down by `offset`. The whole file maps to itself.
struct LineMap {
    var headerLines: Int
    var offset: Int

    static let identity = LineMap(headerLines: .max, offset: 0)

    /// libyaml's marks are 0-based and count characters, not bytes.
    func location(_ mark: yaml_mark_t) -> SourceLocation {
        let line = mark.line + 1
        return SourceLocation(line: line > headerLines ? line + offset : line, column: mark.column + 1)
    }
}

/// What libyaml reads: a header and a body, one after the other, without copying them together.
private final class StreamInput {
    let header: UnsafeBufferPointer<UInt8>
    let body: UnsafeBufferPointer<UInt8>
    private var offset = 0

    init(header: UnsafeBufferPointer<UInt8>, body: UnsafeBufferPointer<UInt8>) {
        self.header = header
        self.body = body
    }

    /// Copies up to `size` bytes into `buffer`; 0 at the end of the stream.
    func read(into buffer: UnsafeMutablePointer<UInt8>, size: Int) -> Int {
        let (source, local) = offset < header.count ? (header, offset) : (body, offset - header.count)
        let count = min(size, source.count - local)
        guard count > 0, let start = source.baseAddress else { return 0 }
        buffer.update(from: start + local, count: count)
        offset += count
        return count
    }
}

/// The event loop: appends node records as their events complete, children before parents.
private struct TreeBuilder {
    var problems: [(location: SourceLocation, message: String)] = []
    private var records: [YAMLDocument.Record] = []
    /// Per node: how many nodes and how many bytes of scalar text it stands for, aliases expanded.
    private var weights: [Int] = []
    private var byteWeights: [Int] = []
    private var text: [UInt8] = []
    private var children: [UInt32] = []
    /// Children of the open collections, innermost last.
    private var pending: [UInt32] = []
    private var frames: [Frame] = []
    private var anchors: [String: Int] = [:]
    private var aliasCost = 0
    private var aliasBytes = 0
    private var documents = 0
    private var rootIndex: Int?
    private let lines: LineMap
    /// Anchors defined in the header of a piece, and whether the job items defined one again.
    private var headerAnchors: Set<String> = []
    private var redefinesHeaderAnchor = false

    private struct Frame {
        var isMapping: Bool
        var location: SourceLocation
        var anchor: String?
        var childStart: Int
        var weight = 1
        var bytes = 0
        /// Mapping only: the key just read, waiting for its value.
        var pendingKey: PendingKey?
        /// Mapping only: entries brought in by merge keys (`<<`), as key/value index pairs.
        var merged: [(UInt32, UInt32)] = []
        /// Mapping only: keys seen so far, once the mapping is too large for a linear scan.
        var keySet: Set<[UInt8]>?
    }

    private enum PendingKey {
        case normal(Int), merge, invalid
    }

    init(lines: LineMap) {
        self.lines = lines
    }

    var result: YAMLParseResult {
        let document = YAMLDocument(records: records, text: text, children: children, rootIndex: rootIndex)
        return YAMLParseResult(
            root: document.root, problems: problems, aliasCost: aliasCost, aliasBytes: aliasBytes,
            redefinesHeaderAnchor: redefinesHeaderAnchor)
    }

    /// Runs libyaml over the input; stops at the first fatal problem. `bytes` is the whole file
    /// when the input is the whole file: reader errors count bytes, and are located through it.
    mutating func run(_ input: StreamInput, bytes: [UInt8]?) {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            problems.append((.start, "could not initialise the YAML parser"))
            return
        }
        defer { yaml_parser_delete(&parser) }
        withExtendedLifetime(input) {
            // `data` is the unretained input; 1 is success, a size of 0 the end of the stream.
            yaml_parser_set_input(&parser, { data, buffer, size, sizeRead in
                guard let data, let buffer, let sizeRead else { return 0 }
                sizeRead.pointee = Unmanaged<StreamInput>.fromOpaque(data).takeUnretainedValue().read(into: buffer, size: size)
                return 1
            }, Unmanaged.passUnretained(input).toOpaque())
            text.reserveCapacity((input.header.count + input.body.count) / 2)
            parseEvents(&parser, bytes: bytes)
        }
    }

    private mutating func parseEvents(_ parser: inout yaml_parser_t, bytes: [UInt8]?) {
        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(&parser, &event) == 1 else {
                problems.append(libyamlProblem(parser, bytes: bytes))
                rootIndex = nil
                return
            }
            defer { yaml_event_delete(&event) }
            if event.type == YAML_STREAM_END_EVENT { return }
            if !handle(event) {
                rootIndex = nil
                return
            }
        }
    }

    /// Handles one event; returns false after a fatal problem.
    private mutating func handle(_ event: yaml_event_t) -> Bool {
        let location = lines.location(event.start_mark)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                problems.append((location, "a manifest holds one YAML document; found a second one here"))
                return false
            }
        case YAML_SCALAR_EVENT:
            let data = event.data.scalar
            let start = text.count
            text.append(contentsOf: UnsafeBufferPointer(start: data.value, count: data.length))
            let index = append(
                YAMLDocument.Record(
                    kind: .scalar, style: Self.style(data.style), line: UInt32(location.line),
                    column: UInt32(location.column), start: UInt32(start), count: UInt32(data.length)),
                weight: 1, bytes: data.length)
            if let anchor = data.anchor { define(Self.string(anchor), as: index, at: location) }
            return add(index)
        case YAML_ALIAS_EVENT:
            let name = Self.string(event.data.alias.anchor)
            guard let target = anchors[name] else {
                problems.append((location, "unknown alias '*\(name)' (no anchor '&\(name)' before it)"))
                let index = append(
                    YAMLDocument.Record(
                        kind: .scalar, style: .plain, line: UInt32(location.line), column: UInt32(location.column),
                        start: 0, count: 0),
                    weight: 1, bytes: 0)
                return add(index)
            }
            aliasCost += weights[target]
            aliasBytes = aliasBytes.addingReportingOverflow(byteWeights[target]).partialValue
            if aliasCost > YAMLParser.aliasBudget {
                problems.append((
                    location, "aliases expand to more than \(YAMLParser.aliasBudget) nodes; refusing to expand further"
                ))
                return false
            }
            if aliasBytes > YAMLParser.aliasByteBudget || aliasBytes < 0 {
                problems.append((
                    location, "aliases expand to more than \(YAMLParser.aliasByteBudget >> 20) MiB of text; refusing to expand further"
                ))
                return false
            }
            let index = append(
                YAMLDocument.Record(
                    kind: .alias, style: .plain, line: UInt32(location.line), column: UInt32(location.column),
                    start: UInt32(target), count: 0),
                weight: weights[target], bytes: byteWeights[target])
            return add(index)
        case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
            if frames.count >= YAMLParser.maxDepth {
                problems.append((location, "nesting deeper than \(YAMLParser.maxDepth) levels"))
                return false
            }
            let isMapping = event.type == YAML_MAPPING_START_EVENT
            let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
            frames.append(Frame(
                isMapping: isMapping, location: location, anchor: anchor.map { Self.string($0) },
                childStart: pending.count))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            guard let frame = frames.popLast() else { return false }
            return add(close(frame))
        default:
            break
        }
        return true
    }

    private mutating func append(_ record: YAMLDocument.Record, weight: Int, bytes: Int) -> Int {
        records.append(record)
        weights.append(weight)
        byteWeights.append(bytes)
        return records.count - 1
    }

    /// Turns a finished collection into a record; merged entries go after the explicit ones.
    private mutating func close(_ frame: Frame) -> Int {
        if frame.isMapping && !frame.merged.isEmpty {
            var present = Set((stride(from: frame.childStart, to: pending.count, by: 2)).map { keyBytes(Int(pending[$0])) })
            for (key, value) in frame.merged where present.insert(keyBytes(Int(key))).inserted {
                pending.append(key)
                pending.append(value)
            }
        }
        let start = children.count
        let childCount = pending.count - frame.childStart
        children.append(contentsOf: pending[frame.childStart...])
        pending.removeSubrange(frame.childStart...)
        let index = append(
            YAMLDocument.Record(
                kind: frame.isMapping ? .mapping : .sequence, style: .plain, line: UInt32(frame.location.line),
                column: UInt32(frame.location.column), start: UInt32(start),
                count: UInt32(frame.isMapping ? childCount / 2 : childCount)),
            weight: frame.weight, bytes: frame.bytes)
        if let anchor = frame.anchor { define(anchor, as: index, at: frame.location) }
        return index
    }

    private mutating func define(_ anchor: String, as index: Int, at location: SourceLocation) {
        anchors[anchor] = index
        guard lines.headerLines != .max else { return }
        if location.line <= lines.headerLines {
            headerAnchors.insert(anchor)
        } else if headerAnchors.contains(anchor) {
            redefinesHeaderAnchor = true
        }
    }

    /// Places a finished node into the open collection, or makes it the root.
    private mutating func add(_ index: Int) -> Bool {
        guard !frames.isEmpty else {
            rootIndex = index
            return true
        }
        let top = frames.count - 1
        frames[top].weight = frames[top].weight.addingReportingOverflow(weights[index]).partialValue
        frames[top].bytes = frames[top].bytes.addingReportingOverflow(byteWeights[index]).partialValue
        guard frames[top].isMapping else {
            pending.append(UInt32(index))
            return true
        }
        guard let key = frames[top].pendingKey else {
            let record = resolved(index)
            if record.kind != .scalar {
                problems.append((location(of: index), "mapping keys must be scalars, found \(kindName(record.kind))"))
                frames[top].pendingKey = .invalid
            } else if record.style == .plain && record.count == 2 && text[Int(record.start)] == UInt8(ascii: "<")
                && text[Int(record.start) + 1] == UInt8(ascii: "<") {
                frames[top].pendingKey = .merge
            } else {
                frames[top].pendingKey = .normal(index)
            }
            return true
        }
        frames[top].pendingKey = nil
        switch key {
        case .invalid:
            break
        case .merge:
            addMergeSources(index, into: top)
        case .normal(let keyIndex):
            if let first = firstKey(equalTo: keyIndex, in: top) {
                let at = location(of: first)
                problems.append((
                    location(of: keyIndex),
                    "duplicate key '\(String(decoding: keyBytes(keyIndex), as: UTF8.self))' "
                        + "(first defined at line \(at.line), column \(at.column))"
                ))
            } else {
                pending.append(UInt32(keyIndex))
                pending.append(UInt32(index))
            }
        }
        return true
    }

    /// The earlier key of the open mapping `frame` with the same text as `keyIndex`, if any.
    private mutating func firstKey(equalTo keyIndex: Int, in frame: Int) -> Int? {
        let start = frames[frame].childStart
        let count = (pending.count - start) / 2
        if count < 32 {
            for entry in 0..<count where sameKey(Int(pending[start + 2 * entry]), keyIndex) {
                return Int(pending[start + 2 * entry])
            }
            return nil
        }
        let bytes = keyBytes(keyIndex)
        if frames[frame].keySet == nil {
            frames[frame].keySet = Set((0..<count).map { keyBytes(Int(pending[start + 2 * $0])) })
        }
        guard frames[frame].keySet!.contains(bytes) else {
            frames[frame].keySet!.insert(bytes)
            return nil
        }
        return (0..<count).map { Int(pending[start + 2 * $0]) }.first { keyBytes($0) == bytes }
    }

    private mutating func addMergeSources(_ index: Int, into frame: Int) {
        let record = resolved(index)
        var sources: [YAMLDocument.Record] = []
        if record.kind == .mapping {
            sources = [record]
        } else if record.kind == .sequence {
            sources = (0..<Int(record.count)).map { resolved(Int(children[Int(record.start) + $0])) }
        }
        guard !sources.isEmpty, sources.allSatisfy({ $0.kind == .mapping }) else {
            problems.append((location(of: index), "merge key '<<' expects a mapping or a list of mappings"))
            return
        }
        for source in sources {
            for entry in 0..<Int(source.count) {
                let at = Int(source.start) + 2 * entry
                frames[frame].merged.append((children[at], children[at + 1]))
            }
        }
    }

    private func resolved(_ index: Int) -> YAMLDocument.Record {
        let record = records[index]
        return record.kind == .alias ? records[Int(record.start)] : record
    }

    /// Whether two scalar keys have the same text, compared in place.
    private func sameKey(_ a: Int, _ b: Int) -> Bool {
        let first = resolved(a), second = resolved(b)
        guard first.count == second.count else { return false }
        let offset = Int(second.start) - Int(first.start)
        for position in Int(first.start)..<Int(first.start + first.count) where text[position] != text[position + offset] {
            return false
        }
        return true
    }

    private func keyBytes(_ index: Int) -> [UInt8] {
        let record = resolved(index)
        guard record.kind == .scalar else { return [] }
        return Array(text[Int(record.start)..<Int(record.start + record.count)])
    }

    private func location(of index: Int) -> SourceLocation {
        SourceLocation(line: Int(records[index].line), column: Int(records[index].column))
    }

    private func kindName(_ kind: YAMLDocument.Kind) -> String {
        switch kind {
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        case .scalar, .alias: return "a scalar"
        }
    }

    private func libyamlProblem(_ parser: yaml_parser_t, bytes: [UInt8]?) -> (SourceLocation, String) {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        let context = parser.context.map { String(cString: $0) }
        let contextAt = lines.location(parser.context_mark)
        if parser.error == YAML_READER_ERROR {
            let location = bytes.map { UTF8Check.location(ofByteOffset: parser.problem_offset, in: $0) } ?? .start
            return (location, "YAML syntax error: \(problem)")
        }
        let offset = Int(parser.problem_mark.index)
        let character = bytes.flatMap { offset < $0.count ? $0[offset] : nil }
        var message = "YAML syntax error: " + Self.plainWords(problem, context: context, at: contextAt, character: character)
        message += " (libyaml: \(problem)" + (context.map { ", \($0) at line \(contextAt.line), column \(contextAt.column)" } ?? "") + ")"
        return (lines.location(parser.problem_mark), message)
    }

    /// libyaml's common complaints in the words of the mistake that causes them (bad
    /// indentation, a tab, an unclosed quote or bracket), for people new to YAML.
    private static func plainWords(_ problem: String, context: String?, at contextAt: SourceLocation, character: UInt8?) -> String {
        let there = "line \(contextAt.line), column \(contextAt.column)"
        switch problem {
        case "found character that cannot start any token" where character == UInt8(ascii: "\t"):
            return "a tab character; YAML indents with spaces only, so replace the tab with spaces"
        case "found character that cannot start any token":
            return "this character cannot start a value here; quote the value"
        case "did not find expected '-' indicator":
            return "this line is not aligned with the list that starts at \(there): every item ('- ') of a list starts in the same column"
        case "did not find expected key":
            return "this line is not aligned with the keys of the mapping that starts at \(there): keys of one mapping start in the same column"
        case "mapping values are not allowed in this context":
            return "unexpected ':' here; is the line indented too far, or does a value contain ': ' (then quote it)?"
        case "could not find expected ':'":
            return "a key without ':' after it (since \(there))"
        case "found unexpected end of stream" where context?.contains("quoted scalar") == true:
            return "the quoted string that starts at \(there) is never closed"
        // `where` binds only to the last pattern of a case: each pattern carries its own.
        case "did not find expected ',' or ']'" where context?.contains("flow") == true,
             "did not find expected ',' or '}'" where context?.contains("flow") == true,
             "did not find expected node content" where context?.contains("flow") == true:
            return "a '[' or '{' is not closed, or an item in it is missing"
        default:
            return problem
        }
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

