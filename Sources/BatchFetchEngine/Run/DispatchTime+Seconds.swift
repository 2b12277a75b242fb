import BatchFetchNetwork
import Dispatch

extension DispatchTime {
    /// Seconds from `earlier` to this time, never negative.
    ///
    /// `uptimeNanoseconds` is unsigned: `now - last` trapped (and crashed a 1 GiB download) when
    /// the delivery thread stored a newer `last` between the watchdog's two reads.
    func seconds(since earlier: DispatchTime) -> Double {
        uptimeNanoseconds > earlier.uptimeNanoseconds ? Double(uptimeNanoseconds - earlier.uptimeNanoseconds) / 1e9 : 0
    }
}
