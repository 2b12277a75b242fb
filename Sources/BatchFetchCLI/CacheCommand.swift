import ArgumentParser
import BatchFetchEngine
import BatchFetchFiles
import BatchFetchSpec
import Foundation

/// `batchfetch cache`: what the content cache holds, checked, and trimmed (Docs/Cache.md).
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "List, measure, verify and trim the content cache.",
        discussion: HelpText.reflowed("""
            The cache is found by --cache DIR, else BATCHFETCH_CACHE, else the cache: of
            --manifest M. An entry's last use is when a run last published from it or filled
            it.

            Examples:
              batchfetch cache ls --cache ~/.cache/batchfetch
              BATCHFETCH_CACHE=/var/cache/batchfetch batchfetch cache gc --max-size 50GiB --older-than 30d
              batchfetch cache verify --manifest datasets.yaml --fix
            """),
        subcommands: [List.self, Usage.self, Verify.self, Collect.self, Remove.self])

    /// Where the cache is: `--cache`, `BATCHFETCH_CACHE`, or `--manifest`'s `cache:`.
    struct Location: ParsableArguments {
        @Option(help: ArgumentHelp("The cache directory (overrides BATCHFETCH_CACHE).", valueName: "dir"), completion: .directory)
        var cache: String?

        @Option(help: ArgumentHelp("Use this manifest's cache: when neither --cache nor BATCHFETCH_CACHE names one.",
                                   valueName: "manifest"), completion: .file(extensions: ["yaml", "yml"]))
        var manifest: String?

        /// The cache, or a usage error (exit 2) saying how to name one.
        func inventory() throws -> CacheInventory {
            var path = cache
            if path == nil, let value = ProcessInfo.processInfo.environment["BATCHFETCH_CACHE"], !value.isEmpty { path = value }
            if path == nil, let manifest {
                path = try ManifestArgument.load(path: manifest).cache
            }
            guard let path else {
                throw CommandFailure(.invalid, "batchfetch: error: no cache: give --cache DIR, set BATCHFETCH_CACHE, or --manifest M whose manifest has cache:")
            }
            do {
                return try CacheInventory(path: path)
            } catch {
                throw CommandFailure(.invalid, "batchfetch: error: \(error.message)")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "Every entry: its sha256, size in bytes and last use.")
        @OptionGroup var location: Location

        func run() throws {
            for entry in try location.inventory().entries() {
                print("\(entry.sha256)  \(entry.size)  \(entry.lastUse.map { UTCTime.rfc3339($0) } ?? "-")")
            }
        }
    }

    struct Usage: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "du", abstract: "The entries' total size in bytes.")
        @OptionGroup var location: Location

        func run() throws {
            let entries = try location.inventory().entries()
            let bytes = entries.reduce(0) { $0 + $1.size }
            print("\(bytes) bytes (\(ByteFormat.bytes(bytes))) in \(entries.count) entr\(entries.count == 1 ? "y" : "ies")")
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Hash every entry; exit 3 when one's content does not match its name.")
        @OptionGroup var location: Location
        @Flag(help: "Evict the entries that do not match.")
        var fix = false

        func run() throws {
            let (checked, problems) = try location.inventory().verify(fix: fix)
            for problem in problems {
                print("corrupt \(problem.sha256): \(problem.message)\(fix ? "; evicted" : "")")
            }
            print("verified \(checked) entr\(checked == 1 ? "y" : "ies"): \(problems.count) corrupt")
            if !problems.isEmpty { throw CommandFailure(.drift) }
        }
    }

    struct Collect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gc",
            abstract: "Remove entries not used for a while, then the least recently used until the rest fit a size.")
        @OptionGroup var location: Location
        @Option(name: .customLong("max-size"), help: ArgumentHelp("Keep at most this much (e.g. 50GiB).", valueName: "size"))
        var maxSize: String?
        @Option(name: .customLong("older-than"), help: ArgumentHelp("Remove entries last used longer ago than this (e.g. 30d).",
                                                                   valueName: "duration"))
        var olderThan: String?

        func validate() throws {
            if maxSize == nil && olderThan == nil { throw ValidationError("give --max-size, --older-than, or both") }
            if let maxSize, case .failure = Quantity.bytes(maxSize) {
                throw ValidationError("--max-size: '\(maxSize)' is not a size such as 50GiB")
            }
            if let olderThan, case .failure = Quantity.seconds(olderThan) {
                throw ValidationError("--older-than: '\(olderThan)' is not a duration such as 30d")
            }
        }

        func run() throws {
            let inventory = try location.inventory()
            let removed = inventory.collect(maxSize: maxSize.flatMap { try? Quantity.bytes($0).get() },
                                            olderThan: olderThan.flatMap { try? Quantity.seconds($0).get() })
            for entry in removed {
                print("removed \(entry.sha256)  \(entry.size)  \(entry.lastUse.map { UTCTime.rfc3339($0) } ?? "-")")
            }
            let rest = inventory.entries()
            print("gc: removed \(removed.count) (\(ByteFormat.bytes(removed.reduce(0) { $0 + $1.size }))); "
                + "\(rest.count) left (\(ByteFormat.bytes(rest.reduce(0) { $0 + $1.size })))")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove the entries of these sha256s.")
        @OptionGroup var location: Location
        @Argument(help: "sha256 digests (64 hex digits).")
        var sha256: [String]

        func run() throws {
            let inventory = try location.inventory()
            var missing = false
            for digest in sha256 {
                if inventory.remove(sha256: digest.lowercased()) {
                    print("removed \(digest.lowercased())")
                } else {
                    Console.error("batchfetch: no entry \(digest)")
                    missing = true
                }
            }
            if missing { throw CommandFailure(.jobsFailed) }
        }
    }
}
