import ArgumentParser
import Foundation

/// Runs the command line and returns the process exit status.
///
/// swift-argument-parser exits with 64 (EX_USAGE) on usage errors; the batchfetch contract says
/// 2, so parsing and error reporting are done here instead of through `main()`.
public enum BatchFetchMain {
    public static func run(arguments: [String]) async -> Int32 {
        do {
            var command = try BatchFetchCommand.parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.success.rawValue
        } catch {
            let code = BatchFetchCommand.exitCode(for: error)
            let message = BatchFetchCommand.fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                return 0
            }
            if !message.isEmpty { Console.error(message) }
            if code == .validationFailure { return ExitStatus.invalid.rawValue }
            return code.rawValue
        }
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
}
