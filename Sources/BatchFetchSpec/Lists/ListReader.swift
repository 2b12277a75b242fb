import Foundation

/// Reads a job list's file in chunks and hands out its rows, whatever the format, with every
/// problem of the file itself (a stray quote, a bad header, a line that is not JSON) reported at
/// its `line:col`.
///
/// The file is never held whole: a million-row list is about 100 MB, and validating one must fit
/// in a few hundred MiB beside its jobs. A record may span chunks (a quoted field with a line
/// break); a record longer than ``longestRecord`` is a problem, which also stops a quote that is
/// never closed from swallowing the rest of the file into one field.
struct ListReader {
    /// Bytes read at a time.
    static let chunkSize = 1 << 20
    /// The longest record (row, line) read; far beyond any URL list's.
    static let longestRecord = 1 << 20

    let list: JobList
    /// Which file the list is in locations (``SourceLocation/file``).
    let file: Int

    /// Why the list could not be read at all.
    enum Failure: Error {
        case unreadable(String)
    }

    /// Reads every row, handing each to `row`; problems go to `problems`. Throws only when the
    /// file cannot be opened or read.
    func read(problems: inout ProblemCollector, row: (ListRow, inout ProblemCollector) -> Void) throws(Failure) {
        let descriptor = open(list.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw .unreadable("not a regular file")
        }
        var chunks = Chunks(descriptor: descriptor)
        try chunks.fill()
        chunks.skipByteOrderMark()
        let format = list.format ?? ListFormatGuess.format(path: list.path, start: chunks.available)
        switch format {
        case .csv, .tsv:
            try readDelimited(&chunks, delimiter: UInt8(ascii: format == .csv ? "," : "\t"), problems: &problems, row: row)
        case .ndjson:
            let decoder = NDJSONRowDecoder(file: file)
            try readLines(&chunks, problems: &problems) { line, number, problems in
                if let parsed = decoder.row(line, number: number, problems: &problems) { row(parsed, &problems) }
            }
        case .lines:
            try readLines(&chunks, problems: &problems) { line, number, problems in
                if let parsed = Self.urlLine(line, number: number, file: file) { row(parsed, &problems) }
            }
        }
    }

    /// About how many rows the list has, from its size and the lines of its first 64 KiB: the
    /// jobs array is reserved once instead of doubling (at a million jobs the last doubling
    /// held 100 MB and 200 MB of jobs at once).
    func estimatedRows() -> Int {
        let descriptor = open(list.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size > 0 else { return 0 }
        var sample = [UInt8](repeating: 0, count: 1 << 16)
        let got = sample.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
        guard got > 0 else { return 0 }
        let lines = sample[..<got].reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        guard lines > 0 else { return 1 }
        return Int(Double(info.st_size) * Double(lines) / Double(got) * 1.02) + 1
    }

    // MARK: - csv, tsv

    private func readDelimited(
        _ chunks: inout Chunks, delimiter: UInt8, problems: inout ProblemCollector, row: (ListRow, inout ProblemCollector) -> Void
    ) throws(Failure) {
        let records = DelimitedRecords(delimiter: delimiter, file: file)
        var line = 1
        var header: ListHeader?
        var sawRow = false
        while true {
            let found = chunks.available.withUnsafeBufferPointer { records.record(in: $0, line: line, atEnd: chunks.atEnd) }
            guard let record = found else {
                if chunks.atEnd { break }
                if chunks.available.count >= Self.longestRecord {
                    problems.error("a row longer than \(Self.longestRecord >> 20) MiB starts here (a quote that is never closed?); "
                        + "the rest of the list is not read", at: SourceLocation(line: line, column: 1, file: file))
                    return
                }
                try chunks.fill()
                continue
            }
            chunks.consume(record.length)
            let location = SourceLocation(line: line, column: 1, file: file)
            line = record.nextLine
            if let problem = record.problem {
                problems.error(problem.message, at: problem.location)
                if header == nil { return }  // without a header no row can be read
                continue
            }
            // A blank line is no row (RFC 4180 would make it a record of one empty field).
            if record.fields.count == 1 && record.fields[0].text.isEmpty { continue }
            guard let columns = header else {
                header = ListHeader(record.fields, at: location, problems: &problems)
                if header == nil { return }
                continue
            }
            sawRow = true
            if let parsed = columns.row(record.fields, at: location, problems: &problems) { row(parsed, &problems) }
        }
        if header == nil {
            problems.error("the list is empty; a \(delimiter == UInt8(ascii: ",") ? "csv" : "tsv") list starts with a header row "
                + "naming its columns ('url' at least)", at: SourceLocation(line: 1, column: 1, file: file))
        } else if !sawRow {
            problems.error("the list has a header but no rows", at: SourceLocation(line: 1, column: 1, file: file))
        }
    }

    // MARK: - ndjson, lines

    /// Hands out every line with its number, without its line break.
    private func readLines(
        _ chunks: inout Chunks, problems: inout ProblemCollector, each: (ArraySlice<UInt8>, Int, inout ProblemCollector) -> Void
    ) throws(Failure) {
        var number = 1
        while true {
            let newline = chunks.available.firstIndex(of: UInt8(ascii: "\n"))
            guard let end = newline ?? (chunks.atEnd ? chunks.available.endIndex : nil) else {
                if chunks.available.count >= Self.longestRecord {
                    problems.error("a line longer than \(Self.longestRecord >> 20) MiB; the rest of the list is not read",
                                   at: SourceLocation(line: number, column: 1, file: file))
                    return
                }
                try chunks.fill()
                continue
            }
            let start = chunks.available.startIndex
            if end == start && newline == nil { break }  // the end, after a final line break
            var line = chunks.available[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            each(line, number, &problems)
            chunks.consume(end - start + (newline == nil ? 0 : 1))
            number += 1
        }
    }

    /// A `lines` row: the line's URL, trimmed; nil for blank lines and `#` comments.
    static func urlLine(_ line: ArraySlice<UInt8>, number: Int, file: Int) -> ListRow? {
        let isSpace: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = line.firstIndex(where: { !isSpace($0) }), line[first] != UInt8(ascii: "#") else { return nil }
        let last = line.lastIndex(where: { !isSpace($0) })!
        let location = SourceLocation(line: number, column: first - line.startIndex + 1, file: file)
        var row = ListRow(location: location)
        // Invalid UTF-8 is kept as replacement characters: the URL check then names the line.
        row.url = ListRow.Field(text: String(decoding: line[first...last], as: UTF8.self), location: location)
        return row
    }
}

/// A file read a chunk at a time, with the bytes not yet consumed.
private struct Chunks {
    let descriptor: Int32
    /// Unconsumed bytes; indices grow as bytes are consumed, and the slice is compacted when more
    /// are read.
    private(set) var available: ArraySlice<UInt8> = []
    private(set) var atEnd = false

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Reads the next chunk onto the end of what is left.
    mutating func fill() throws(ListReader.Failure) {
        var buffer = Array(available)
        let old = buffer.count
        buffer.reserveCapacity(old + ListReader.chunkSize)
        var failure: Int32 = 0
        buffer.append(contentsOf: repeatElement(0, count: ListReader.chunkSize))
        let got = buffer.withUnsafeMutableBufferPointer { pointer -> Int in
            while true {
                let count = Foundation.read(descriptor, pointer.baseAddress! + old, ListReader.chunkSize)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { failure = errno }
                return max(count, 0)
            }
        }
        if failure != 0 { throw .unreadable(String(cString: strerror(failure))) }
        buffer.removeLast(ListReader.chunkSize - got)
        if got == 0 { atEnd = true }
        available = buffer[...]
    }

    mutating func consume(_ count: Int) {
        available = available.dropFirst(count)
    }

    /// Drops a UTF-8 byte order mark (spreadsheets write one) at the start.
    mutating func skipByteOrderMark() {
        if available.starts(with: [0xEF, 0xBB, 0xBF]) { consume(3) }
    }
}
