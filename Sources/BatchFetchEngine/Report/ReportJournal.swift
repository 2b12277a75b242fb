import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import NIOConcurrencyHelpers

/// The report entries of a run's finished jobs, written to an unnamed file in the output
/// directory as each job finishes instead of kept in memory, with the report's counts kept as
/// they come. Each entry is the job's text exactly as the report prints it (``ReportText``), so
/// writing the report copies bytes in report order.
///
/// Why: a run held every job's result until the end (about 1 KB each), and the report's
/// encoding on top of them made a run's memory peak (bench/results/history.md); a job now costs a position and a length.
/// When the file cannot be made or written, entries stay in memory: the report is worth more
/// than the bound.
///
/// Entries reach the file in blocks of ``blockSize`` and are read back a block at a time: a
/// `pwrite` per job and a `pread` per entry were 40,000 of the 305,000 system calls of a run of
/// 20,000 small files. Entries not yet written are read back only after ``finished()`` wrote
/// them.
struct ReportJournal {
    /// The entries once every job has one: read by the report (``ReportJobs``).
    final class Entries: Sendable {
        enum Entry: Sendable {
            case file(offset: Int64, length: Int)
            case memory([UInt8])
            /// Finished, and not listed (``RunReport/JobsReported``).
            case unlisted
        }

        private let file: JournalFile?
        /// The journal's own array (every job has its entry by now), shared rather than copied
        /// without its optionals: the report is written when the run's memory peaks.
        private let entries: [Entry?]
        /// The block of the file read last. The report asks for entries in job order, close to
        /// the order they were written in, so one read serves many.
        private let block = NIOLockedValueBox<(start: Int64, bytes: [UInt8])?>(nil)

        fileprivate init(file: JournalFile?, entries: [Entry?]) {
            self.file = file
            self.entries = entries
        }

        var count: Int { entries.count }

        func text(at position: Int) throws(BatchFetchError) -> [UInt8] {
            switch entries[position]! {
            case .memory(let text):
                return text
            case .unlisted:
                preconditionFailure("an unlisted job's entry was asked for")
            case .file(let offset, let length):
                return try block.withLockedValue { fileText(offset: offset, length: length, block: &$0) }.get()
            }
        }

        /// An entry's text from `block` (read anew when it does not hold the entry).
        private func fileText(offset: Int64, length: Int,
                              block: inout (start: Int64, bytes: [UInt8])?) -> Result<[UInt8], BatchFetchError> {
            if block.map({ offset < $0.start || offset + Int64(length) > $0.start + Int64($0.bytes.count) }) ?? true {
                let start = offset / Int64(ReportJournal.blockSize) * Int64(ReportJournal.blockSize)
                do throws(BatchFetchError) {
                    block = (start, try file!.read(offset: start, length: max(Int(offset - start) + length, ReportJournal.blockSize)))
                } catch {
                    return .failure(error)
                }
            }
            let from = Int(offset - block!.start)
            guard from + length <= block!.bytes.count else { return .failure(JournalFile.shortRead) }
            return .success(Array(block!.bytes[from..<from + length]))
        }

        /// The job decoded from its entry. The file is this process's own and unnamed, so a
        /// failure to read it back is a broken invariant, not an input error.
        func job(at position: Int) -> RunReport.Job {
            do {
                return try JSONDecoder().decode(RunReport.Job.self, from: Data(try text(at: position)))
            } catch {
                preconditionFailure("the run's journal cannot be read back: \(error)")
            }
        }
    }

    /// A finished job with its report text, encoded where the job ran (``init(_:listing:)``), so
    /// the scheduler, which records every job one after another, only counts and copies.
    struct Encoded: Sendable {
        let job: RunReport.Job
        /// Nil for a job the report does not list (`listing`): counted, never encoded.
        let text: [UInt8]?

        init(_ job: RunReport.Job, listing: RunReport.JobsReported? = nil) {
            self.job = job
            guard listing?.lists(job.status) ?? true else {
                text = nil
                return
            }
            do {
                text = try ReportText.entry(job, encoder: StableJSON.prettyEncoder())
            } catch {
                preconditionFailure("a report entry cannot be encoded: \(error)")  // strings, numbers and arrays only
            }
        }
    }

    private let file: JournalFile?
    /// A write to the file failed (a full disk): later entries stay in memory.
    private var fileFailed = false
    private var entries: [Entries.Entry?]
    /// Where the next entry goes in the file.
    private var end: Int64 = 0
    /// The entries after the last write to the file (they end at `end`), and their jobs.
    private var pending: [UInt8] = []
    private var pendingJobs: [Int] = []
    static let blockSize = 64 << 10
    /// The report's counts of the jobs recorded so far.
    private(set) var summary = RunReport.Summary()

    /// Jobs recorded without an entry (``Encoded/text`` nil): the report does not list them.
    private var unlisted = 0

    /// A journal for `count` jobs, in an unnamed file in `directory` (memory when nil or when
    /// the file cannot be made).
    init(count: Int, directory: SafeDirectory?) {
        self.init(count: count, file: directory.flatMap(JournalFile.init(in:)))
    }

    init(count: Int, file: JournalFile?) {
        self.file = file
        entries = Array(repeating: nil, count: count)
        summary.jobs = count
    }

    /// Whether the job at `index` has finished (has its entry).
    func contains(_ index: Int) -> Bool {
        entries[index] != nil
    }

    /// Records the finished job at `index` (once: the scheduler finishes or skips a job once).
    mutating func record(_ encoded: Encoded, at index: Int) {
        assert(entries[index] == nil, "job \(index) recorded twice")
        summary.count(encoded.job, command: .run)
        guard let text = encoded.text else {
            entries[index] = .unlisted
            unlisted += 1
            return
        }
        guard file != nil, !fileFailed else {
            entries[index] = .memory(text)
            return
        }
        entries[index] = .file(offset: end, length: text.count)
        end += Int64(text.count)
        pending.append(contentsOf: text)
        pendingJobs.append(index)
        if pending.count >= Self.blockSize { writePending() }
    }

    /// Writes the pending entries to the file; when that fails, they and every later entry stay
    /// in memory.
    private mutating func writePending() {
        guard let file, !fileFailed, !pending.isEmpty else { return }
        let start = end - Int64(pending.count)
        if !file.write(pending, at: start) {
            for job in pendingJobs {
                guard case .file(let offset, let length) = entries[job] else { continue }
                let from = Int(offset - start)
                entries[job] = .memory(Array(pending[from..<from + length]))
            }
            fileFailed = true
        }
        pending.removeAll(keepingCapacity: true)
        pendingJobs.removeAll(keepingCapacity: true)
    }

    /// The entries, once every job has one.
    mutating func finished() -> Entries {
        precondition(!entries.contains { $0 == nil }, "a job has no report entry")
        writePending()
        guard unlisted > 0 else { return Entries(file: file, entries: entries) }
        return Entries(file: file, entries: entries.filter {
            if case .unlisted? = $0 { return false }
            return true
        })
    }
}

/// The journal's unnamed file: on Linux `O_TMPFILE` in the output directory, elsewhere a name
/// unlinked at once; gone with the process, whatever ends it.
final class JournalFile: Sendable {
    private let descriptor: Int32

    /// A journal in an open file of the caller's (tests: `/dev/full`, where every write fails).
    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    init?(in directory: SafeDirectory) {
        var descriptor = directory.openUnnamed(toLink: false, mode: 0o600) ?? -1
        if descriptor < 0 {
            let name = SafeDirectory.temporaryName(for: "batchfetch-journal")
            guard let named = try? directory.openFile(name, O_RDWR | O_CREAT | O_EXCL, mode: 0o600) else { return nil }
            directory.unlink(name)
            descriptor = named
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Writes `bytes` at `offset`; false when they could not all be written (a full disk).
    func write(_ bytes: [UInt8], at offset: Int64) -> Bool {
        bytes.withUnsafeBytes { FileSink.pwriteFully(descriptor, $0, at: offset) }
    }

    /// Up to `length` bytes from `offset`: fewer at the end of the file.
    func read(offset: Int64, length: Int) throws(BatchFetchError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: length)
        let got = bytes.withUnsafeMutableBytes { FileSink.preadFully(descriptor, $0.baseAddress!, length, at: offset) }
        guard got >= 0 else { throw FileSink.failure(errno, "cannot read the run's journal") }
        bytes.removeLast(length - got)
        return bytes
    }

    static let shortRead = FileSink.failure(EIO, "cannot read the run's journal")
}
