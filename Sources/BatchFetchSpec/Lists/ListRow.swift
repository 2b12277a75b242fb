/// The columns (csv, tsv) and keys (ndjson) a job list may have.
enum ListColumn: String, CaseIterable {
    case url, id, dest, size, checksum, sha256, sha512, sha1, md5, mirrors

    /// The digest algorithm a column of bare hex is in.
    var algorithm: Checksum.Algorithm? {
        switch self {
        case .sha256: return .sha256
        case .sha512: return .sha512
        case .sha1: return .sha1
        case .md5: return .md5
        default: return nil
        }
    }
}

/// One row of a job list, whatever its format: the values it gives and where each one is.
///
/// Held in stored properties, not a dictionary or an array: a million rows are read one after
/// another, and each would otherwise allocate storage for five values.
struct ListRow {
    typealias Field = DelimitedRecords.Field

    /// Where the row starts.
    var location: SourceLocation
    var url, id, dest, size, checksum, sha256, sha512, sha1, md5, mirrorText: Field?
    /// `mirrors` of an ndjson row, given as an array (csv and tsv give one space-separated field).
    var mirrorList: [Field]?

    init(location: SourceLocation) {
        self.location = location
    }

    /// A value given (empty csv fields count as not given).
    subscript(column: ListColumn) -> Field? {
        get {
            switch column {
            case .url: return url
            case .id: return id
            case .dest: return dest
            case .size: return size
            case .checksum: return checksum
            case .sha256: return sha256
            case .sha512: return sha512
            case .sha1: return sha1
            case .md5: return md5
            case .mirrors: return mirrorText
            }
        }
        set {
            switch column {
            case .url: url = newValue
            case .id: id = newValue
            case .dest: dest = newValue
            case .size: size = newValue
            case .checksum: checksum = newValue
            case .sha256: sha256 = newValue
            case .sha512: sha512 = newValue
            case .sha1: sha1 = newValue
            case .md5: md5 = newValue
            case .mirrors: mirrorText = newValue
            }
        }
    }

    /// The mirrors: the array, or the space-separated field split (each part located at its
    /// own column).
    var mirrors: [Field] {
        if let mirrorList { return mirrorList }
        guard let field = mirrorText else { return [] }
        var result: [Field] = []
        var column = field.location.column
        var current = ""
        var start = column
        for character in field.text {
            if character == " " || character == "\t" {
                if !current.isEmpty { result.append(Field(text: current, location: at(start, field.location))) }
                current = ""
                start = column + 1
            } else {
                current.append(character)
            }
            column += 1
        }
        if !current.isEmpty { result.append(Field(text: current, location: at(start, field.location))) }
        return result
    }

    private func at(_ column: Int, _ base: SourceLocation) -> SourceLocation {
        SourceLocation(line: base.line, column: column, file: base.file)
    }
}
