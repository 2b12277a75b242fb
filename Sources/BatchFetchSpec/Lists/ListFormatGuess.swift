/// What `format: auto` makes of a list: by the file's extension, then by its first line.
enum ListFormatGuess {
    static func format(path: String, start: ArraySlice<UInt8>) -> JobList.Format {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let lowered = name.lowercased()
        for (suffixes, format) in [([".csv"], JobList.Format.csv), ([".tsv", ".tab"], .tsv),
                                   ([".ndjson", ".jsonl"], .ndjson), ([".txt", ".urls", ".list"], .lines)]
        where suffixes.contains(where: { lowered.hasSuffix($0) }) {
            return format
        }
        let firstLine = start.prefix { $0 != UInt8(ascii: "\n") }
        let text = String(decoding: firstLine, as: UTF8.self)
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        if trimmed.hasPrefix("{") { return .ndjson }
        if text.contains("\t") { return .tsv }
        if text.contains(","), !text.contains("://") || text.lowercased().contains("url") { return .csv }
        return .lines
    }
}
