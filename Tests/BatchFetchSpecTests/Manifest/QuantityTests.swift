import BatchFetchSpec
import Testing

@Suite struct QuantityTests {
    @Test(arguments: [
        ("123", Int64(123)), ("10KB", 10_000), ("10kb", 10_000), ("1.5GiB", 1_610_612_736), ("4 MiB", 4_194_304),
        ("2M", 2_000_000), ("0", 0), ("1TB", 1_000_000_000_000),
    ])
    func sizes(text: String, bytes: Int64) throws {
        #expect(try Quantity.bytes(text).get() == bytes)
    }

    @Test func sizeErrors() throws {
        #expect(Quantity.bytes("1.5.5") == .failure(.malformed))
        #expect(Quantity.bytes(".5MB") == .failure(.malformed))
        #expect(Quantity.bytes("10 parsecs") == .failure(.unknownUnit("parsecs")))
        #expect(Quantity.bytes("99999999999TiB") == .failure(.tooLarge))
        // 2^63 is one past Int64.max: these trapped (SIGILL) in Int64(Double) before.
        #expect(Quantity.bytes("9223372036854775808") == .failure(.tooLarge))
        #expect(Quantity.bytes("8388608TiB") == .failure(.tooLarge))
        #expect(Quantity.rate("9223372036854775808B/s") == .failure(.tooLarge))
        #expect(try Quantity.bytes("9223372036854775807").get() == .max)
    }

    @Test func rates() throws {
        #expect(try Quantity.rate("50MB/s").get() == 50_000_000)
        #expect(try Quantity.rate("2MiB/s").get() == 2_097_152)
        #expect(Quantity.rate("50MB") == .failure(.missingPerSecond))
    }

    @Test(arguments: [("500ms", 0.5), ("30s", 30.0), ("5m", 300.0), ("2h", 7200.0), ("1h30m", 5400.0), ("5min", 300.0),
                      ("1 hour", 3600.0), ("1h 30m", 5400.0), ("90 Seconds", 90.0), ("2 days", 172_800.0)])
    func durations(text: String, seconds: Double) throws {
        #expect(try Quantity.seconds(text).get() == seconds)
    }

    @Test func durationErrors() throws {
        #expect(Quantity.seconds("30") == .failure(.missingUnit))
        #expect(Quantity.seconds("30S") == .failure(.unknownUnit("S")))
        #expect(Quantity.seconds("") == .failure(.malformed))
        #expect(Quantity.seconds("s") == .failure(.malformed))
        #expect(Quantity.seconds("1m30") == .failure(.missingUnit))
        #expect(Quantity.seconds(String(repeating: "9", count: 400) + "d") == .failure(.tooLarge))
    }
}
