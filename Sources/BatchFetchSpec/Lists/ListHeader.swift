import Foundation

/// The header row of a csv or tsv list: which field holds which column.
///
/// Column names are compared without case and surrounding spaces. A column that is not one of
/// ``ListColumn`` is ignored (exports carry captions, labels and licences beside the URL),
/// unless it looks like a misspelt one (`sha265`, `urls`): a checksum column silently ignored
/// would fetch unverified bytes.
struct ListHeader {
    /// For each field of a row, the column it holds, if any.
    private let columns: [ListColumn?]

    /// Nil, with the problems reported, when the header cannot be used.
    init?(_ fields: [DelimitedRecords.Field], at location: SourceLocation, problems: inout ProblemCollector) {
        var columns: [ListColumn?] = []
        var seen: [ListColumn: SourceLocation] = [:]
        var usable = true
        let names = ListColumn.allCases.map(\.rawValue)
        for field in fields {
            let name = field.text.trimmingCharacters(in: .whitespaces).lowercased()
            let column = ListColumn(rawValue: name)
            if let column {
                if let first = seen[column] {
                    problems.error("column '\(name)' is named twice in the header (first at column \(first.column))",
                                   at: field.location)
                    usable = false
                }
                seen[column] = field.location
            } else if let closest = Suggestion.closest(to: name, in: names), !name.isEmpty {
                // Reported (nothing is fetched) but the rows are still read, for their problems.
                problems.error("unknown column '\(field.text)' (did you mean '\(closest)'?); columns are "
                    + names.joined(separator: ", ") + " (others are ignored)", at: field.location)
            }
            columns.append(column)
        }
        if seen[.url] == nil {
            let looksLikeData = fields.contains { $0.text.contains("://") }
            problems.error("the header row has no 'url' column"
                + (looksLikeData ? "; the first line holds a URL, so the list has no header: add one "
                    + "(such as 'url,dest') or use 'format: lines' for a plain list of URLs" : ""), at: location)
            usable = false
        }
        if seen[.checksum] != nil, let bare = ListColumn.allCases.first(where: { $0.algorithm != nil && seen[$0] != nil }) {
            problems.error("use either 'checksum' or '\(bare.rawValue)' columns, not both", at: seen[bare]!)
            usable = false
        }
        guard usable else { return nil }
        self.columns = columns
    }

    /// A record as a row; nil (with a problem) when its number of fields is not the header's.
    func row(_ fields: [DelimitedRecords.Field], at location: SourceLocation, problems: inout ProblemCollector) -> ListRow? {
        guard fields.count == columns.count else {
            problems.error("this row has \(fields.count) field\(fields.count == 1 ? "" : "s"), the header "
                + "\(columns.count); a field holding the delimiter must be quoted", at: location)
            return nil
        }
        var row = ListRow(location: location)
        for (field, column) in zip(fields, columns) {
            guard let column, !field.text.isEmpty else { continue }
            row[column] = field
        }
        return row
    }
}
