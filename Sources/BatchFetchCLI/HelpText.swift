/// Help text written as source paragraphs, handed to swift-argument-parser unwrapped.
///
/// The parser wraps help to the terminal's width; text already broken at 90 columns in the
/// source came out ragged in an 80-column terminal (a long line, then a stub). So prose lines of
/// a paragraph are joined into one, and only lines that start with a space (examples, lists)
/// and blank lines keep their breaks.
enum HelpText {
    static func reflowed(_ text: String) -> String {
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if let last = lines.last, !last.isEmpty, !line.isEmpty, !line.hasPrefix(" "), !last.hasPrefix(" "),
               !last.hasSuffix(":") {
                lines[lines.count - 1] = last + " " + line
            } else {
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}
