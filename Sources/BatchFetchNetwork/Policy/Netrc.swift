import BatchFetchFiles
import BatchFetchObjectStore
import Foundation
import NIOConcurrencyHelpers

/// Credentials from a `.netrc` file, read as curl reads it: `machine NAME login USER password
/// PASS` entries, an optional `default` entry, `account` ignored, `macdef` bodies skipped (up to
/// an empty line), values quoted with `"` where they contain spaces.
///
/// Opt-in per job (`netrc: true`); the file is `NETRC` if set, else `$HOME/.netrc`. A missing or
/// unreadable file gives no credentials, as with curl's `--netrc-optional`: the server's 401 then
/// says what is wrong.
package struct Netrc: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var login: String
        package var password: String
    }

    /// Entries by lowercased machine name; the `default` entry under "".
    package private(set) var entries: [String: Entry] = [:]

    package init(text: String) {
        var tokens = Self.tokens(text)[...]
        var machine: String?
        var login: String?
        var password: String?
        func flush() {
            if let machine, entries[machine] == nil, login != nil || password != nil {
                entries[machine] = Entry(login: login ?? "", password: password ?? "")
            }
            login = nil
            password = nil
        }
        while let token = tokens.popFirst() {
            switch token {
            case "machine":
                flush()
                machine = tokens.popFirst()?.lowercased()
            case "default":
                flush()
                machine = ""
            case "login": login = tokens.popFirst()
            case "password": password = tokens.popFirst()
            case "account": _ = tokens.popFirst()
            default: break
            }
        }
        flush()
    }

    /// Login and password for `host`, falling back to `default`.
    package func credentials(forHost host: String) -> Entry? {
        entries[host.lowercased()] ?? entries[""]
    }

    /// Whitespace-separated tokens, with `"…"` quoting (`\"` and `\\` escapes), and `macdef`
    /// bodies removed.
    private static func tokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let line = lines.popFirst() {
            var current = ""
            var quoted = false
            var inToken = false
            var escaped = false
            for character in line {
                if quoted {
                    if escaped {
                        current.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        quoted = false
                    } else {
                        current.append(character)
                    }
                } else if character == "\"" && !inToken {
                    quoted = true
                    inToken = true
                } else if character.isWhitespace {
                    if inToken { tokens.append(current) }
                    current = ""
                    inToken = false
                } else {
                    current.append(character)
                    inToken = true
                }
            }
            if inToken { tokens.append(current) }
            if tokens.count >= 2, tokens[tokens.count - 2] == "macdef" {
                // The macro body runs to the next empty line.
                while let body = lines.popFirst(), !body.trimmingCharacters(in: .whitespaces).isEmpty {}
                tokens.removeLast(2)
            }
        }
        return tokens
    }

    /// Files read so far, by path.
    private static let loaded = NIOLockedValueBox([String: Netrc?]())

    /// The file named by `NETRC`, else `$HOME/.netrc`; read once per process and path.
    package static func load(environment: [String: String]) -> Netrc? {
        let path = environment["NETRC"] ?? (environment["HOME"].map { $0 + "/.netrc" } ?? NSHomeDirectory() + "/.netrc")
        return loaded.withLockedValue { loaded in
            if let cached = loaded[path] { return cached }
            let netrc = (try? String(contentsOfFile: path, encoding: .utf8)).map(Netrc.init(text:))
            loaded[path] = netrc
            return netrc
        }
    }
}
