@testable import BatchFetchCLI
import BatchFetchEngine
import Foundation
import Testing
import TestOrigin

/// The per-job lines' numbers, formatted in integers, read exactly as `String(format: "%.1f")`
/// wrote them.
@Suite struct ByteFormatTests {
    static func printf(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    @Test func byteCountsMatchPrintf() {
        // Unit boundaries, exact halves (1,280 B is 1.25 KiB: "1.2", half to even) and the top.
        var counts: [Int64] = [0, 1, 1023, 1024, 1025, 1075, 1076, 1280, 1331, 1332, 1_048_575, 1_048_576,
                               (1 << 40) - 1, 1 << 40, 1 << 50, Int64.max]
        var generator = SeededGenerator(seed: 6)
        for _ in 0..<5_000 {
            counts.append(Int64.random(in: 0...(Int64(1) << Int64.random(in: 1...62, using: &generator)), using: &generator))
        }
        for count in counts {
            #expect(ByteFormat.bytes(count) == Self.printf(count), "\(count)")
        }
    }

    @Test func secondsHaveOneDecimal() {
        #expect(ByteFormat.seconds(0) == "0.0")
        #expect(ByteFormat.seconds(0.04) == "0.0")
        #expect(ByteFormat.seconds(0.06) == "0.1")
        #expect(ByteFormat.seconds(12.34) == "12.3")
        #expect(ByteFormat.seconds(59.99) == "60.0")
        #expect(ByteFormat.seconds(-1.25) == "-1.3")
        for _ in 0..<2_000 {
            let seconds = Double.random(in: 0..<100_000)
            // Away from exact halves, where printf rounds the binary value half to even.
            guard abs((seconds * 10).truncatingRemainder(dividingBy: 1) - 0.5) > 1e-6 else { continue }
            #expect(ByteFormat.seconds(seconds) == String(format: "%.1f", seconds), "\(seconds)")
        }
    }
}
