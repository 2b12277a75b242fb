/// `pieces:` of a download job and `sources:` of a job or the defaults (Docs/Mirrors.md).
extension ManifestDecoder {
    /// `pieces: {length: SIZE, sha256: [HEX…]}`: a power-of-two length from 256 KiB to 64 MiB,
    /// one 64-digit sha256 per piece — as many as the job's `size` makes, when it gives one.
    mutating func decodePieces(_ fields: Fields, size: Int64?, context: ProblemContext) -> PieceHashes? {
        guard let entry = fields["pieces"] else { return nil }
        let context = context.appending("pieces: ")
        guard let mapping = entry.value.mapping else {
            problems.error("\(context)must be a mapping with 'length' and 'sha256', found \(entry.value.kindDescription)",
                           at: entry.value.location)
            return nil
        }
        checkKeys(mapping, allowed: ["length", "sha256"], context: context)
        let values = Fields(mapping)
        var length: Int64?
        if let lengthEntry = required(values, "length", at: entry.value.location, context: context),
           let text = scalarText(lengthEntry, context: context, expected: "a size such as 4MiB") {
            switch Self.size(text) {
            case .success(let value) where PieceHashes.allows(value):
                length = value
            case .success:
                problems.error("\(context)'length' must be a power of two from 256KiB to 64MiB, found '\(text)'",
                               at: lengthEntry.value.location)
            case .failure(let problem):
                problems.error("\(context)\(problem.message.replacing("'size'", with: "'length'"))", at: lengthEntry.value.location)
            }
        }
        var hashes: [String] = []
        var valid = true
        if let hashEntry = required(values, "sha256", at: entry.value.location, context: context) {
            for (text, location) in stringList(hashEntry, context: context) {
                let hex = text.lowercased()
                if hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) {
                    hashes.append(hex)
                } else {
                    valid = false
                    problems.error("\(context)'sha256': '\(text)' is not a sha256 (64 hex digits)", at: location)
                }
            }
            if hashes.isEmpty && valid {
                problems.error("\(context)'sha256' must list one digest per piece, found none", at: hashEntry.value.location)
                valid = false
            }
        }
        guard let length, valid else { return nil }
        let pieces = PieceHashes(length: length, sha256: hashes)
        if let size, !pieces.fits(size) {
            problems.error("\(context)\(hashes.count) digests do not fit 'size: \(size)' in pieces of \(length) bytes "
                + "(\(pieces.count(for: size)) expected)", at: entry.value.location)
            return nil
        }
        return pieces
    }
}
