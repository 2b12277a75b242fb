import Foundation

/// Turns one line of an ndjson list into a row: a JSON object whose keys are ``ListColumn``s.
///
/// Foundation's `JSONDecoder` parses the line (no hand-written JSON); a value's column is then
/// found by looking for its key in the line, since no JSON parser here reports positions.
struct NDJSONRowDecoder {
    let file: Int
    private let decoder = JSONDecoder()

    init(file: Int) {
        self.file = file
    }

    /// The row of a line; nil for a blank line, or (with a problem) for one that is not a
    /// usable object.
    func row(_ line: ArraySlice<UInt8>, number: Int, problems: inout ProblemCollector) -> ListRow? {
        guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return nil }
        let start = SourceLocation(line: number, column: 1, file: file)
        let object: JSONObjectLine
        do {
            object = try decoder.decode(JSONObjectLine.self, from: Data(line))
        } catch {
            problems.error("this line is not a JSON object (ndjson has one object per line, such as "
                + #"{"url": "https://…", "sha256": "…"})"#, at: start)
            return nil
        }
        var row = ListRow(location: start)
        let names = ListColumn.allCases.map(\.rawValue)
        for (key, value) in object.entries {
            let location = SourceLocation(line: number, column: Self.valueColumn(of: key, in: line), file: file)
            guard let column = ListColumn(rawValue: key) else {
                if let closest = Suggestion.closest(to: key, in: names) {
                    problems.error("unknown key '\(key)' (did you mean '\(closest)'?); keys are "
                        + names.joined(separator: ", ") + " (others are ignored)", at: location)
                }
                continue
            }
            switch (column, value) {
            case (_, .null):
                continue
            case (.mirrors, .array(let items)):
                var mirrors: [ListRow.Field] = []
                for item in items {
                    guard case .string(let text) = item else {
                        problems.error("'mirrors' holds URLs as strings, found \(item.kind)", at: location)
                        continue
                    }
                    mirrors.append(ListRow.Field(text: text, location: location))
                }
                row.mirrorList = mirrors
            case (.size, .number(let text)), (_, .string(let text)):
                if !text.isEmpty { row[column] = ListRow.Field(text: text, location: location) }
            default:
                let expected = column == .mirrors ? "a list of URLs" : column == .size ? "a number of bytes" : "a string"
                problems.error("'\(key)' must be \(expected), found \(value.kind)", at: location)
            }
        }
        if row.checksum != nil, let bare = ListColumn.allCases.first(where: { $0.algorithm != nil && row[$0] != nil }) {
            problems.error("use either 'checksum' or '\(bare.rawValue)', not both", at: row[bare]!.location)
            return nil
        }
        return row
    }

    /// The column of the value of `"key":` in the line, or 1 when the key is written with
    /// escapes and cannot be found as is.
    static func valueColumn(of key: String, in line: ArraySlice<UInt8>) -> Int {
        let needle = Array("\"\(key)\"".utf8)
        var index = line.startIndex
        while let found = line[index...].firstIndex(of: needle[0]) {
            var cursor = found
            if line[found...].starts(with: needle) {
                cursor += needle.count
                while cursor < line.endIndex && (line[cursor] == UInt8(ascii: " ") || line[cursor] == UInt8(ascii: "\t")) { cursor += 1 }
                if cursor < line.endIndex && line[cursor] == UInt8(ascii: ":") {
                    cursor += 1
                    while cursor < line.endIndex && (line[cursor] == UInt8(ascii: " ") || line[cursor] == UInt8(ascii: "\t")) { cursor += 1 }
                    return line[line.startIndex..<cursor].reduce(1) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
                }
            }
            index = found + 1
        }
        return 1
    }
}

/// A JSON object's entries, decoded without knowing its keys in advance.
private struct JSONObjectLine: Decodable {
    var entries: [(key: String, value: JSONValue)]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        entries = try container.allKeys.map { ($0.stringValue, try container.decode(JSONValue.self, forKey: $0)) }
    }
}

/// Any JSON value, as much of it as a list row needs.
enum JSONValue: Decodable {
    case string(String)
    /// A number, as its decimal text.
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object

    var kind: String {
        switch self {
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "true or false"
        case .null: return "null"
        case .array: return "a list"
        case .object: return "an object"
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(Double.self) {
            self = .number(String(value))
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object
        }
    }
}
