import BatchFetchSpec
import Foundation
import Testing

@Suite struct ChecksumTests {
    @Test func uppercaseHexIsNormalisedToLowercase() throws {
        let checksum = try Checksum.parse("md5:ACBD18DB4CC2F85CEDEF654FCCC4A4D8").get()
        #expect(checksum.algorithm == .md5)
        #expect(checksum.description == "md5:acbd18db4cc2f85cedef654fccc4a4d8")
    }

    @Test func everyAlgorithmChecksItsLength() throws {
        for algorithm in Checksum.Algorithm.allCases {
            let good = String(repeating: "a", count: algorithm.hexLength)
            #expect((try? Checksum.parse("\(algorithm.rawValue):\(good)").get()) != nil)
            #expect(Checksum.parse("\(algorithm.rawValue):\(good)0") == .failure(.wrongLength(algorithm, algorithm.hexLength + 1)))
        }
    }

    @Test func malformedChecksums() throws {
        #expect(Checksum.parse("abcdef") == .failure(.missingAlgorithm))
        #expect(Checksum.parse("sha3:abcdef") == .failure(.unknownAlgorithm("sha3")))
        #expect(Checksum.parse("sha1:" + String(repeating: "g", count: 40)) == .failure(.notHex(.sha1)))
    }
}

/// A checksum is held as its bytes and spelt back as the same lowercase hex.
@Suite struct ChecksumStorageTests {
    @Test func everyAlgorithmSpellsItsDigestBack() throws {
        var generator = SystemRandomNumberGenerator()
        for algorithm in Checksum.Algorithm.allCases {
            for _ in 0..<50 {
                let hex = String((0..<algorithm.hexLength).map { _ in "0123456789abcdef".randomElement(using: &generator)! })
                let checksum = try Checksum.parse("\(algorithm.rawValue):\(hex.uppercased())").get()
                #expect(checksum.hex == hex)
                #expect(checksum == Checksum(algorithm: algorithm, hex: hex))
                #expect(checksum.algorithm == algorithm)
            }
        }
        #expect(Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64)) != Checksum(algorithm: .sha1, hex: String(repeating: "0", count: 64)))
        #expect(Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32)) != Checksum(algorithm: .sha1, hex: String(repeating: "0", count: 32) + "00000000"))
    }

    /// What `parse` refuses, `init(algorithm:hex:)` still keeps, as lowercase text.
    @Test func aValueThatIsNotHexOfItsLengthIsKeptAsText() {
        for text in ["", "abc", "XYZ", String(repeating: "g", count: 64), String(repeating: "a", count: 65)] {
            let checksum = Checksum(algorithm: .sha256, hex: text)
            #expect(checksum.hex == text.lowercased())
            #expect(checksum.algorithm == .sha256)
        }
    }

    @Test func itEncodesAsAlgorithmAndHex() throws {
        let checksum = try Checksum.parse("sha512:" + String(repeating: "0f", count: 64)).get()
        let data = try JSONEncoder().encode(checksum)
        #expect(String(decoding: data, as: UTF8.self).contains("\"hex\":\"" + String(repeating: "0f", count: 64) + "\""))
        #expect(try JSONDecoder().decode(Checksum.self, from: data) == checksum)
    }
}
