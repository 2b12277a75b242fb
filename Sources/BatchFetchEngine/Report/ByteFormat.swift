import BatchFetchFiles
import BatchFetchNetwork
import Foundation

/// Human-readable byte counts (binary units) and durations, for the per-job lines and the
/// reports for people (`batchfetch report`).
///
/// In integers, not `String(format:)`: that goes through CoreFoundation's formatter, three
/// times for each job's line (bench/results/profile.md, "Choices the code cites").
package enum ByteFormat {
    package static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var unit = 0
        var scale: Int64 = 1
        while unit < units.count - 1, count / scale >= 1024 {
            scale *= 1024
            unit += 1
        }
        guard unit > 0 else { return "\(count) B" }
        // Tenths of the unit, rounded half to even as "%.1f" does (the quotient is exact).
        let (whole, rest) = count.quotientAndRemainder(dividingBy: scale)
        let (tenth, remainder) = (rest * 10).quotientAndRemainder(dividingBy: scale)
        var tenths = whole * 10 + tenth
        if remainder * 2 > scale || (remainder * 2 == scale && tenths % 2 == 1) { tenths += 1 }
        return "\(oneDecimal(tenths)) \(units[unit])"
    }

    /// `seconds` with one decimal ("%.1f" but for exact halves, which round away from zero).
    package static func seconds(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(seconds)" }
        return oneDecimal(Int64((seconds * 10).rounded()))
    }

    private static func oneDecimal(_ tenths: Int64) -> String {
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }
}
