@testable import BatchFetchSpec
import Testing

/// Sum files as projects publish them (`checksums_from`).
@Suite struct SumFileTests {
    static let a = String(repeating: "a", count: 64), b = String(repeating: "B", count: 64)
    static let md5 = String(repeating: "c", count: 32), sha512 = String(repeating: "d", count: 128)

    @Test func gnuLinesInTextAndBinaryMode() {
        let sums = SumFile(text: "\(Self.a)  train.tar.gz\n\(Self.b) *test.tar.gz\n\n# comment\n")
        #expect(sums.entries.count == 2)
        #expect(sums.checksums(for: ["train.tar.gz"]) == [Checksum(algorithm: .sha256, hex: Self.a)])
        #expect(sums.checksums(for: ["test.tar.gz"]) == [Checksum(algorithm: .sha256, hex: Self.b.lowercased())])
    }

    @Test func bsdTaggedLinesAndMixedAlgorithms() {
        let sums = SumFile(text: """
            SHA256 (data/train.tar.gz) = \(Self.a)
            MD5 (train.tar.gz) = \(Self.md5)
            SHA512 (./train.tar.gz) = \(Self.sha512)
            \(Self.b)  other
            """)
        #expect(sums.checksums(for: ["train.tar.gz", "data/train.tar.gz"]) == [
            Checksum(algorithm: .sha256, hex: Self.a), Checksum(algorithm: .sha512, hex: Self.sha512),
            Checksum(algorithm: .md5, hex: Self.md5),
        ])
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
        #expect(sums.checksums(for: ["train.tar.gz"]).isEmpty)
    }
}
