import BatchFetchFiles
import Foundation

/// Reads the JSON state cache of batchfetch before the SQLite store
/// (`<output_dir>/.batchfetch-state.json`, `{"files": {dest: entry}, "version": 1}`), once, to
/// migrate it (``StateCache``). A file in the layout those versions wrote (one `"dest" : {` line
/// per entry, its object ending on a line `    }`) is read an entry at a time, so a large one is
/// never decoded whole; any other valid layout (a file edited by hand) is decoded whole.
package enum LegacyStateFile {
    private struct Stored: Decodable {
        var version: Int
        var files: [String: StateCache.Entry]
    }

    /// Calls `each` for every entry whose dest `keep` accepts; false when the text is not a
    /// version 1 cache (nothing is migrated then).
    package static func read(_ text: Data, keeping keep: (String) -> Bool, _ each: (String, StateCache.Entry) -> Void) -> Bool {
        if readEntries(text, keeping: keep, each) { return true }
        guard let whole = try? JSONDecoder().decode(Stored.self, from: text), whole.version == 1 else { return false }
        for (dest, entry) in whole.files.sorted(by: { $0.key < $1.key }) where keep(dest) { each(dest, entry) }
        return true
    }

    /// ``read(_:keeping:_:)`` an entry at a time; false when the text is not in the old layout or
    /// an entry does not decode (then nothing was passed to `each`: entries are collected first).
    /// JSON strings never hold a raw newline, so no line starts or ends inside one.
    private static func readEntries(_ text: Data, keeping keep: (String) -> Bool, _ each: (String, StateCache.Entry) -> Void) -> Bool {
        let entries = text.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> [(String, StateCache.Entry)]? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var position = 0
            /// The next line's bytes without its newline; nil at the end.
            func nextLine() -> Slice<UnsafeBufferPointer<UInt8>>? {
                guard position < bytes.count else { return nil }
                let start = position
                while position < bytes.count, bytes[position] != UInt8(ascii: "\n") { position += 1 }
                defer { position += 1 }
                return bytes[start..<position]
            }
            guard nextLine()?.elementsEqual("{".utf8) == true,
                  nextLine()?.elementsEqual("  \"files\" : {".utf8) == true else { return nil }
            let decoder = JSONDecoder()
            var entries: [(String, StateCache.Entry)] = []
            var line = nextLine()
            // Each entry: `    "dest" : {`, its fields, `    }` (`    },` but for the last).
            while let header = line, header.starts(with: "    \"".utf8), header.reversed().starts(with: "{ : ".utf8) {
                let quoted = header.dropFirst(4).dropLast(4)
                guard let key = try? decoder.decode(String.self, from: Data(quoted)) else { return nil }
                var end = nextLine()
                while let current = end, !current.elementsEqual("    }".utf8), !current.elementsEqual("    },".utf8) { end = nextLine() }
                guard let end else { return nil }
                if keep(key) {
                    let object = Data(bytes[(header.endIndex - 1)..<(end.startIndex + 5)])
                    guard let entry = try? decoder.decode(StateCache.Entry.self, from: object) else { return nil }
                    entries.append((key, entry))
                }
                line = nextLine()
            }
            if entries.isEmpty, line?.isEmpty == true { line = nextLine() }  // an empty cache's blank line
            guard line?.elementsEqual("  },".utf8) == true, nextLine()?.elementsEqual("  \"version\" : 1".utf8) == true,
                  nextLine()?.elementsEqual("}".utf8) == true, nextLine() == nil else { return nil }
            return entries
        }
        guard let entries else { return false }
        for (dest, entry) in entries { each(dest, entry) }
        return true
    }
}
