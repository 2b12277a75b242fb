@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
import BatchFetchSpec
import Testing

/// The pure rules of where an archive entry goes (``EntryPath``): names taken apart, `..` and
/// absolute names refused, `strip_components` and globs applied, link targets that could leave
/// the tree refused.
@Suite struct EntryPathTests {
    static func extract(strip: Int = 0, include: [String] = [], exclude: [String] = []) throws -> Extract {
        Extract(into: TemplatedString(literal: "t"), stripComponents: strip,
                include: try include.map { try Glob.parse($0).get() }, exclude: try exclude.map { try Glob.parse($0).get() })
    }

    @Test func namesAreTakenApart() throws {
        let plain = try Self.extract()
        #expect(EntryPath.place("./a//b/./c.txt", format: .tar, extract: plain) == .write(["a", "b", "c.txt"]))
        #expect(EntryPath.place("./", format: .tar, extract: plain) == .skip)
        #expect(EntryPath.place("a/../../x", format: .tar, extract: plain) == .unsafe("climbs out of the tree with '..'"))
        #expect(EntryPath.place("/etc/passwd", format: .tar, extract: plain) == .unsafe("is an absolute path"))
        #expect(EntryPath.place("a\\b", format: .tar, extract: plain) == .write(["a\\b"]))
        guard case .unsafe = EntryPath.place("a\\b", format: .zip, extract: plain) else { Issue.record("a zip backslash passed"); return }
        // The one rule of every written path (DestPath): no control character in a name.
        for name in ["a/b\nforged log line.txt", "esc\u{1B}[31m.txt", "c1\u{85}.txt", "nul\u{0}.txt"] {
            #expect(EntryPath.place(name, format: .tar, extract: plain) == .unsafe("holds a control character (such as a newline) in its name"),
                    "\(name.debugDescription)")
        }
    }

    @Test func stripAndGlobsShapeTheTree() throws {
        let shaped = try Self.extract(strip: 1, include: ["**/*.txt"], exclude: ["skip/**"])
        #expect(EntryPath.place("top", format: .tar, extract: shaped) == .skip)
        #expect(EntryPath.place("top/a.txt", format: .tar, extract: shaped) == .write(["a.txt"]))
        #expect(EntryPath.place("top/d/b.txt", format: .tar, extract: shaped) == .write(["d", "b.txt"]))
        #expect(EntryPath.place("top/d/b.bin", format: .tar, extract: shaped) == .skip)
        #expect(EntryPath.place("top/skip/c.txt", format: .tar, extract: shaped) == .skip)
    }

    @Test func linkTargetsThatCouldLeaveTheTreeAreRefused() {
        #expect(EntryPath.symlinkProblem(target: "a.txt", at: ["l"]) == nil)
        #expect(EntryPath.symlinkProblem(target: "../a.txt", at: ["d", "l"]) == nil)
        #expect(EntryPath.symlinkProblem(target: "./../../a", at: ["d", "e", "l"]) == nil)
        #expect(EntryPath.symlinkProblem(target: "../a.txt", at: ["l"])?.contains("leads out of the tree") == true)
        #expect(EntryPath.symlinkProblem(target: "/etc", at: ["l"])?.contains("absolute") == true)
        #expect(EntryPath.symlinkProblem(target: "a/../b", at: ["l"])?.contains("goes back up after a name") == true)
        #expect(EntryPath.symlinkProblem(target: "", at: ["l"])?.contains("empty target") == true)
    }
}
