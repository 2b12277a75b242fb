import ArgumentParser
import BatchFetchSpec
import Foundation

/// Runs the command line and returns the process exit status.
///
/// swift-argument-parser exits with 64 (EX_USAGE) on usage errors; the batchfetch contract says
/// 2, so parsing and error reporting are done here instead of through `main()`.
public enum BatchFetchMain {
    public static func run(arguments: [String]) async -> Int32 {
        if let message = unknownCommand(arguments) {
            Console.error(message)
            return ExitStatus.invalid.rawValue
        }
        do {
            var command = try BatchFetchCommand.parseAsRoot(Self.withPieceDefault(arguments))
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.success.rawValue
        } catch {
            let (code, message) = ExitStatus.ending(error)
            if code == ExitStatus.success.rawValue {
                if !message.isEmpty { print(message) }  // --help, --version
                return code
            }
            if !message.isEmpty { Console.error(message) }
            return code
        }
    }
}

extension BatchFetchMain {
    /// `pin --pieces` without a size means 4 MiB (Docs/Mirrors.md): the parser needs a value, so
    /// one is put in when the next argument is not a size (an option, the manifest, nothing).
    static func withPieceDefault(_ arguments: [String]) -> [String] {
        guard arguments.first == "pin" else { return arguments }
        var result: [String] = []
        for (index, argument) in arguments.enumerated() {
            result.append(argument)
            guard argument == "--pieces" else { continue }
            let next = arguments.indices.contains(index + 1) ? arguments[index + 1] : nil
            if next.map({ (try? Quantity.bytes($0).get()) == nil }) ?? true { result.append("4MiB") }
        }
        return result
    }

    /// A message for a first argument that is neither an option nor a command: the parser would
    /// say "2 unexpected arguments", which does not tell a newcomer that `frobnicate` is no command.
    static func unknownCommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = BatchFetchCommand.configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        return "batchfetch: unknown command '\(first)'\(Suggestion.hint(for: first, in: names)); "
            + "the commands are \(names.dropLast().joined(separator: ", ")) (see 'batchfetch --help')"
    }
}

/// Writes to stderr; stdout is kept for machine-readable output.
enum Console {
    static func error(_ text: String) {
        errorText(text + "\n")
    }

    /// Writes text to stderr as it is (no newline added).
    static func errorText(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Whether a write to `descriptor` always returns without waiting for a reader: a regular
    /// file or a device that is not a terminal (`/dev/null`). A pipe fills when its reader
    /// pauses (a pager, a stopped consumer) and a terminal stops on ^S.
    static func writesNeverWait(_ descriptor: Int32) -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        let kind = info.st_mode & S_IFMT
        return kind == S_IFREG || (kind == S_IFCHR && isatty(descriptor) == 0)
    }
}
