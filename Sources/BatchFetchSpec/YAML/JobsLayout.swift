import CYAML
import Foundation

/// Where and how a manifest's `jobs:` sequence is written, so `batchfetch add` can append a job
/// as text that matches it: after the last job of a block sequence (at its dash's column, in
/// the last job's style, block or flow mapping), or before the `]` of a flow sequence. Found
/// with libyaml's events, whose marks give positions; the text itself is never re-serialised,
/// so every other byte (comments, anchors, quoting, CRLF) stays as it was.
package struct JobsLayout: Sendable, Equatable {
    package enum Shape: Sendable, Equatable {
        /// `jobs:` followed by `- ` items: append at `offset`; items' dashes at `dashColumn`;
        /// `flowItems` when the last item is a `{…}` mapping.
        case block(offset: Int, dashColumn: Int, flowItems: Bool)
        /// `jobs: [ … ]`: insert at `offset` (the `]`), after a comma unless `empty`.
        case flow(offset: Int, empty: Bool)
        /// No `jobs` key: a new `jobs:` block goes at the end of the file.
        case absent
    }

    package var shape: Shape

    /// The layout of `bytes` (a manifest that parses), or nil when libyaml cannot read it or its
    /// `jobs` is not a sequence.
    package static func find(in bytes: [UInt8]) -> JobsLayout? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        return bytes.withUnsafeBufferPointer { buffer -> JobsLayout? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var walker = Walker(lines: LineOffsets(bytes))
            var event = yaml_event_t()
            while yaml_parser_parse(&parser, &event) == 1 {
                defer { yaml_event_delete(&event) }
                if event.type == YAML_STREAM_END_EVENT { return walker.layout(bytes) }
                walker.handle(event)
                if walker.failed { return nil }
            }
            return nil
        }
    }

    /// Follows the events: the root mapping's keys, and inside `jobs` the items and their ends.
    private struct Walker {
        let lines: LineOffsets
        /// Open collections, innermost last: whether each is a flow one.
        var stack: [Bool] = []
        /// In the root mapping: whether the next scalar is a key, and whether the last key was `jobs`.
        var expectingKey = true
        var valueIsJobs = false
        var sawJobs = false
        /// The `jobs` sequence's depth in `stack` once open.
        var jobsDepth: Int?
        var jobsFlow = false
        var jobsStart = 0
        var sequenceEnd = 0
        /// The last item's start (`- ` content) and whether it is a flow mapping.
        var lastItemFlow = false
        var itemCount = 0
        /// Where the last content inside `jobs` ended (a byte offset).
        var contentEnd = 0
        var failed = false

        mutating func handle(_ event: yaml_event_t) {
            let depth = stack.count
            switch event.type {
            case YAML_MAPPING_START_EVENT, YAML_SEQUENCE_START_EVENT:
                let flow = event.type == YAML_MAPPING_START_EVENT
                    ? event.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                    : event.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                if depth == 1 { takeValue() }
                if depth == 1 && valueIsJobs {
                    guard event.type == YAML_SEQUENCE_START_EVENT else { failed = true; return }
                    (jobsDepth, jobsFlow, sawJobs) = (depth + 1, flow, true)
                    jobsStart = lines.offset(event.start_mark)
                } else if let jobsDepth, depth == jobsDepth {
                    itemCount += 1
                    lastItemFlow = flow && event.type == YAML_MAPPING_START_EVENT
                }
                stack.append(flow)
            case YAML_MAPPING_END_EVENT, YAML_SEQUENCE_END_EVENT:
                let flow = stack.popLast() ?? false
                if let jobsDepth, stack.count + 1 == jobsDepth, event.type == YAML_SEQUENCE_END_EVENT {
                    sequenceEnd = lines.offset(event.start_mark)
                    self.jobsDepth = nil
                } else if let jobsDepth, stack.count >= jobsDepth, flow {
                    contentEnd = max(contentEnd, lines.offset(event.end_mark))
                }
            case YAML_SCALAR_EVENT, YAML_ALIAS_EVENT:
                if depth == 1 {
                    if expectingKey, event.type == YAML_SCALAR_EVENT {
                        let value = String(decoding: UnsafeBufferPointer(start: event.data.scalar.value, count: event.data.scalar.length), as: UTF8.self)
                        valueIsJobs = value == "jobs"
                        expectingKey = false
                    } else {
                        takeValue()
                    }
                } else if let jobsDepth, depth >= jobsDepth {
                    contentEnd = max(contentEnd, lines.offset(event.end_mark))
                }
            default:
                break
            }
        }

        /// The root mapping's value was read: the next scalar is a key.
        private mutating func takeValue() {
            expectingKey = true
        }

        func layout(_ bytes: [UInt8]) -> JobsLayout? {
            guard sawJobs else { return JobsLayout(shape: .absent) }
            if jobsFlow { return JobsLayout(shape: .flow(offset: sequenceEnd, empty: itemCount == 0)) }
            guard itemCount > 0 else { return nil }
            // After the line the last job's content ends on (a block scalar ends at a line's start).
            var offset = contentEnd
            if offset > 0 && bytes[offset - 1] != UInt8(ascii: "\n") {
                while offset < bytes.count && bytes[offset] != UInt8(ascii: "\n") { offset += 1 }
                if offset < bytes.count { offset += 1 }
            }
            return JobsLayout(shape: .block(offset: offset, dashColumn: lines.column(of: jobsStart), flowItems: lastItemFlow))
        }
    }

    /// Byte offsets of a text's lines, to turn libyaml's marks (line and column in characters)
    /// into byte offsets.
    struct LineOffsets {
        let bytes: [UInt8]
        var starts: [Int] = [0]

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") { starts.append(index + 1) }
        }

        func offset(_ mark: yaml_mark_t) -> Int {
            let line = Int(mark.line)
            guard line < starts.count else { return bytes.count }
            var offset = starts[line]
            var column = Int(mark.column)
            // Columns count characters: step over UTF-8 sequences whole.
            while column > 0 && offset < bytes.count {
                offset += 1
                while offset < bytes.count && bytes[offset] & 0xC0 == 0x80 { offset += 1 }
                column -= 1
            }
            return offset
        }

        /// The column (in bytes) of `offset` on its line.
        func column(of offset: Int) -> Int {
            offset - (starts.last { $0 <= offset } ?? 0)
        }
    }
}
