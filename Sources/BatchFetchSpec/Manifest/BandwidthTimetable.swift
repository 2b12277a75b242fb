import Foundation

/// `bandwidth:` and `--bwlimit`: the run's total download rate, a single rate or a timetable in
/// rclone's syntax (`"08:00,512Ki 19:00,10Mi 23:00,off"`, `"Mon-08:00,1Mi Sat-00:00,off"`), in
/// local time.
///
/// A pure value: ``rate(at:in:)`` says the limit in force at a moment, so the rule is tested
/// with fixed dates and time zones (`BandwidthTimetableTests`); the run's rate limiter asks it
/// for every range it paces, so a run that crosses a boundary changes speed there.
///
/// The syntax, as rclone documents it (rclone.org/docs/#bwlimit-bandwidth-spec): tokens separated
/// by spaces, each `HH:MM,RATE` or `Ddd-HH:MM,RATE` (`Mon`…`Sun`), or one bare `RATE`. A rate is
/// a number with an optional binary unit (`B`, `K`/`Ki`, `M`/`Mi`, `G`/`Gi`, `T`/`Ti`; a bare
/// number is KiB/s, as in rclone; a trailing `B` or `/s` is allowed) or `off`. A rate written
/// `UP:DOWN` takes the download half. An entry without a day applies every day; each entry holds
/// until the next one in the week, and the last one of the week holds over into its start.
public struct BandwidthTimetable: Sendable, Equatable {
    /// One change of limit: from `minute` of the week (Monday 00:00 is 0), `bytesPerSecond`
    /// (nil: no limit).
    public struct Entry: Sendable, Equatable {
        public var minute: Int
        public var bytesPerSecond: Int64?
    }

    /// The week's changes, by minute.
    public private(set) var entries: [Entry]

    public static let minutesPerWeek = 7 * 24 * 60
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Parses rclone's syntax; the error says which token is wrong and why.
    public init(parsing text: String) throws(BandwidthTimetableError) {
        let tokens = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard !tokens.isEmpty else { throw BandwidthTimetableError("is empty") }
        if tokens.count == 1, !tokens[0].contains(",") {
            entries = [Entry(minute: 0, bytesPerSecond: try Self.rate(tokens[0]))]
            return
        }
        var entries: [Entry] = []
        for token in tokens {
            let parts = token.split(separator: ",", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw BandwidthTimetableError("'\(token)' is not TIME,RATE (as in 08:00,512Ki or Mon-08:00,off)") }
            let rate = try Self.rate(parts[1])
            var time = parts[0]
            var days = Array(0..<7)
            if let dash = time.firstIndex(of: "-") {
                let name = time[..<dash].lowercased()
                guard let day = Self.days.firstIndex(of: name) else {
                    throw BandwidthTimetableError("'\(token)': '\(time[..<dash])' is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)")
                }
                days = [day]
                time = String(time[time.index(after: dash)...])
            }
            let clock = time.split(separator: ":", omittingEmptySubsequences: false)
            guard clock.count == 2, clock[0].count == 2, clock[1].count == 2, let hour = Int(clock[0]), let minute = Int(clock[1]),
                  (0..<24).contains(hour), (0..<60).contains(minute) else {
                throw BandwidthTimetableError("'\(token)': '\(time)' is not a time of day HH:MM")
            }
            for day in days { entries.append(Entry(minute: day * 1440 + hour * 60 + minute, bytesPerSecond: rate)) }
        }
        entries.sort { $0.minute < $1.minute }
        for (earlier, later) in zip(entries, entries.dropFirst()) where earlier.minute == later.minute {
            throw BandwidthTimetableError("two entries for \(Self.describe(later.minute))")
        }
        self.entries = entries
    }

    /// The limit in force at `date` in `timeZone` (nil: none).
    public func rate(at date: Date, in timeZone: TimeZone = .current) -> Int64? {
        rate(atMinuteOfWeek: Self.minuteOfWeek(date, in: timeZone))
    }

    /// The limit in force at `minute` of the week.
    public func rate(atMinuteOfWeek minute: Int) -> Int64? {
        (entries.last { $0.minute <= minute } ?? entries.last)?.bytesPerSecond
    }

    /// The highest limit the timetable sets (nil when it has none): what a paced range is sized
    /// for.
    public var highestRate: Int64? { entries.compactMap(\.bytesPerSecond).max() }

    /// Minutes since Monday 00:00 in `timeZone`.
    public static func minuteOfWeek(_ date: Date, in timeZone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        // Calendar's weekday: Sunday is 1.
        let day = ((parts.weekday ?? 2) + 5) % 7
        return day * 1440 + (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }

    private static func describe(_ minute: Int) -> String {
        let day = days[minute / 1440].capitalized
        return "\(day)-" + String(format: "%02d:%02d", minute % 1440 / 60, minute % 60)
    }

    /// A rate in rclone's syntax: bytes per second, nil for `off`.
    static func rate(_ text: String) throws(BandwidthTimetableError) -> Int64? {
        var value = text
        if let colon = value.lastIndex(of: ":") { value = String(value[value.index(after: colon)...]) }  // UP:DOWN
        if value.lowercased() == "off" { return nil }
        if value.hasSuffix("/s") { value.removeLast(2) }
        var digits = value.prefix { $0.isNumber || $0 == "." }
        var unit = value.dropFirst(digits.count).lowercased()
        if unit.count > 1, unit.hasSuffix("b") { unit.removeLast() }  // MiB, MB, KB
        if unit.hasSuffix("i") { unit.removeLast() }
        let scale: Double
        switch unit {
        case "": scale = 1024  // rclone: a bare number is KiB/s
        case "b": scale = 1
        case "k": scale = 1024
        case "m": scale = 1_048_576
        case "g": scale = 1_073_741_824
        case "t": scale = 1_099_511_627_776
        default: throw BandwidthTimetableError("'\(text)' is not a rate such as 512Ki, 10M or off")
        }
        if digits.isEmpty { digits = "x" }
        guard let number = Double(digits), number > 0, number * scale < 1e15 else {
            throw BandwidthTimetableError("'\(text)' is not a rate such as 512Ki, 10M or off")
        }
        return Int64(number * scale)
    }
}

/// Why a timetable is refused.
public struct BandwidthTimetableError: Error, Equatable, Sendable {
    public let message: String

    init(_ message: String) {
        self.message = message
    }
}

/// The run's download rate limit: `rate_limit` (fixed) and `bandwidth`/`--bwlimit` (a timetable),
/// the lower of the two in force at each moment.
public struct RunRateLimit: Sendable, Equatable {
    public var fixed: Int64?
    public var timetable: BandwidthTimetable?
    /// Where the timetable's times are read (`TZ`).
    public var timeZone: TimeZone

    public init(fixed: Int64? = nil, timetable: BandwidthTimetable? = nil, timeZone: TimeZone = .current) {
        self.fixed = fixed
        self.timetable = timetable
        self.timeZone = timeZone
    }

    /// Whether any limit can ever be in force (a timetable that is `off` throughout sets none).
    public var isSet: Bool { highest != nil }

    /// The limit in force at `date` (nil: none).
    public func rate(at date: Date) -> Int64? {
        [fixed, timetable?.rate(at: date, in: timeZone)].compactMap { $0 }.min()
    }

    /// The highest limit that can be in force: what a paced range is sized for.
    public var highest: Int64? {
        guard let timetable else { return fixed }
        guard let top = timetable.highestRate else { return fixed }
        // An `off` spell leaves the fixed limit alone in force.
        let hasOff = timetable.entries.contains { $0.bytesPerSecond == nil }
        if let fixed { return hasOff ? fixed : min(fixed, top) }
        return top
    }
}
