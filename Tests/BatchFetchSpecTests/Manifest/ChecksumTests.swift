import BatchFetchSpec
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
