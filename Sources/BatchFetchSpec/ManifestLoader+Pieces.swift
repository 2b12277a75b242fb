import Foundation
import Synchronization

/// Parsing and decoding a large manifest on several cores, one piece per core.
///
/// Every piece is the header plus a run of job items (``ManifestPieces``), so each core parses
/// and decodes a small manifest of its own with the ordinary code and shares nothing mutable with
/// the others. The header is decoded once per piece; its problems are taken from the first piece
/// only, the job items' from every piece, numbered on from the pieces before.
extension ManifestLoader {
    /// Parses the pieces side by side; nil when the file cannot be cut or a piece raises any
    /// doubt, and it must be parsed whole.
    static func parsePieces(_ bytes: [UInt8], count: Int) -> [YAMLParseResult]? {
        let found = bytes.withUnsafeBufferPointer { ManifestPieces.find(in: $0, count: count) }
        guard let pieces = found else { return nil }
        let results = concurrentMap(pieces.parts.count) { index in
            bytes.withUnsafeBufferPointer { YAMLParser.parse(part: pieces.parts[index], of: pieces, in: $0) }
        }
        let trusted = results.allSatisfy { result in
            // The header's `jobs` must hold this piece's items; anything else is a cut in the
            // wrong place or a file the pieces do not fit.
            result.problems.isEmpty && !result.redefinesHeaderAnchor
                && result.root?.mapping?.first(where: { $0.key == "jobs" })?.value.sequence?.isEmpty == false
        }
        guard trusted,
              results.reduce(0, { $0 + $1.aliasCost }) <= YAMLParser.aliasBudget,
              results.reduce(0, { $0 + $1.aliasBytes }) <= YAMLParser.aliasByteBudget
        else { return nil }
        return results
    }

    /// Decodes parsed pieces into one manifest and its problems, as ``ManifestDecoder/decode``
    /// would have decoded the whole file.
    func decodePieces(
        _ pieces: consuming [YAMLParseResult], path: String, baseDirectory: String
    ) -> (manifest: Manifest?, problems: [(location: SourceLocation, message: String)]) {
        var work: [PieceWork] = []
        var firstNumber = 1
        for piece in consume pieces {
            var decoder = ManifestDecoder(environment: environment)
            // `parsePieces` made sure every root is a mapping with job items.
            guard let root = piece.root, let top = decoder.decodeTopLevel(root, path: path, baseDirectory: baseDirectory) else {
                preconditionFailure("a piece without job items was trusted")
            }
            if !work.isEmpty { decoder.problems = ProblemCollector() }  // the first piece reports the header
            work.append(PieceWork(decoder: decoder, top: top, firstNumber: firstNumber))
            firstNumber += top.items.count
        }
        // Each piece decodes straight into its slots of the one array (moving half a million jobs
        // from one array to another cost half a second), then the gaps left by items that were
        // not jobs, if any, are closed.
        let pieceWork = work
        let jobs = [Job](unsafeUninitializedCapacity: firstNumber - 1) { buffer, initialized in
            nonisolated(unsafe) let output = buffer.baseAddress!
            let written = concurrentMap(pieceWork.count) { index in
                let piece = pieceWork[index]
                let start = piece.firstNumber - 1
                return piece.state.withLock { state in
                    var slot = start
                    state.decoder.decodeJobs(state.top.items, firstNumber: piece.firstNumber, defaults: state.top.defaults) { job in
                        (output + slot).initialize(to: job)
                        slot += 1
                    }
                    state.top.items = []  // the piece's document goes with its last node
                    return slot - start
                }
            }
            var end = 0
            for (piece, count) in zip(pieceWork, written) {
                if piece.firstNumber - 1 != end { (output + end).moveInitialize(from: output + piece.firstNumber - 1, count: count) }
                end += count
            }
            initialized = end
        }
        let problems = work.flatMap { piece in piece.state.withLock { $0.decoder.problems.problems } }
        return work[0].state.withLock { first in
            var manifest = first.top.manifest
            manifest.jobs = jobs
            first.decoder.problems = ProblemCollector()
            first.decoder.appendListJobs(to: &manifest, defaults: first.top.defaults)
            first.decoder.fitPerHost(&manifest)
            return (manifest, problems + first.decoder.problems.problems)
        }
    }

    /// One piece's decoder and results; a class, so each core mutates only its own (its mutex
    /// is never contended: it carries the state to the core that decodes the piece).
    private final class PieceWork: Sendable {
        let state: Mutex<(decoder: ManifestDecoder, top: ManifestDecoder.TopLevel)>
        let firstNumber: Int

        init(decoder: consuming ManifestDecoder, top: consuming ManifestDecoder.TopLevel, firstNumber: Int) {
            state = Mutex((decoder, top))
            self.firstNumber = firstNumber
        }
    }
}
