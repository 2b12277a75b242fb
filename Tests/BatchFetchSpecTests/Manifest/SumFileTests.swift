@testable import BatchFetchSpec
import Foundation
import Testing

/// Sum files as projects publish them (`checksums_from`).
@Suite struct SumFileTests {
    static let a = String(repeating: "a", count: 64), b = String(repeating: "B", count: 64)
    static let md5 = String(repeating: "c", count: 32), sha512 = String(repeating: "d", count: 128)

    /// The checksums `sums` lists for a file at `path` (relative to the sum file), nil if none.
    static func listed(_ sums: SumFile, _ path: String) -> [Checksum]? {
        try? sums.match(paths: [path], fileName: (path as NSString).lastPathComponent).get().checksums
    }

    @Test func gnuLinesInTextAndBinaryMode() {
        let sums = SumFile(text: "\(Self.a)  train.tar.gz\n\(Self.b) *test.tar.gz\n\n# comment\n")
        #expect(sums.entries.count == 2)
        #expect(Self.listed(sums, "train.tar.gz") == [Checksum(algorithm: .sha256, hex: Self.a)])
        #expect(Self.listed(sums, "test.tar.gz") == [Checksum(algorithm: .sha256, hex: Self.b.lowercased())])
    }

    @Test func bsdTaggedLinesAndMixedAlgorithms() {
        let sums = SumFile(text: """
            SHA256 (data/train.tar.gz) = \(Self.a)
            MD5 (train.tar.gz) = \(Self.md5)
            SHA512 (./train.tar.gz) = \(Self.sha512)
            \(Self.b)  other
            """)
        #expect(Self.listed(sums, "train.tar.gz") == [
            Checksum(algorithm: .sha512, hex: Self.sha512), Checksum(algorithm: .md5, hex: Self.md5),
        ])
        #expect(Self.listed(sums, "data/train.tar.gz") == [Checksum(algorithm: .sha256, hex: Self.a)])
    }

    /// Debian's installer sums list `./vmlinuz` before `./cdrom/vmlinuz`: the path decides, not
    /// the first file name that matches.
    @Test func thePathRelativeToTheSumFileDecidesNotTheFirstFileName() throws {
        let sums = SumFile(text: "\(Self.a)  ./vmlinuz\n\(Self.b)  ./cdrom/vmlinuz\n\(Self.md5)  ./netboot/netboot.tar.gz\n")
        #expect(Self.listed(sums, "cdrom/vmlinuz") == [Checksum(algorithm: .sha256, hex: Self.b.lowercased())])
        #expect(Self.listed(sums, "vmlinuz") == [Checksum(algorithm: .sha256, hex: Self.a)])
        // The first path that is listed wins; a unique file name is the last resort.
        #expect(try sums.match(paths: ["debian/netboot/netboot.tar.gz", "netboot/netboot.tar.gz"], fileName: "netboot.tar.gz")
            .get().name == "netboot/netboot.tar.gz")
        #expect(try sums.match(paths: [], fileName: "netboot.tar.gz").get().checksums == [Checksum(algorithm: .md5, hex: Self.md5)])
        // Two files named vmlinuz and no path that decides: an error naming both.
        #expect(throws: SumFile.MatchFailure.ambiguous(["cdrom/vmlinuz", "vmlinuz"])) {
            try sums.match(paths: ["gtk/vmlinuz"], fileName: "vmlinuz").get()
        }
        #expect(throws: SumFile.MatchFailure.notListed) { try sums.match(paths: ["initrd.gz"], fileName: "initrd.gz").get() }
    }

    @Test func namesWithSpacesAndAPGPWrapperAreHandled() {
        let sums = SumFile(text: """
            -----BEGIN PGP SIGNED MESSAGE-----
            Hash: SHA256

            \(Self.a)  my file.iso
            -----BEGIN PGP SIGNATURE-----
            iQIzBAEBCAAdFiEE
            -----END PGP SIGNATURE-----
            """)
        #expect(sums.entries == [SumFile.Entry(name: "my file.iso", checksum: Checksum(algorithm: .sha256, hex: Self.a))])
    }

    @Test func malformedLinesAreNotEntries() {
        let sums = SumFile(text: "\(Self.a) train.tar.gz\nzz  bad\n\(Self.a.prefix(60))  short\nSHA256 (x) = nothex\n")
        #expect(sums.entries.isEmpty)
        #expect(Self.listed(sums, "train.tar.gz") == nil)
    }
}
