import Foundation

/// SIGINT and SIGTERM for `run`: the first one asks the run to stop (report `interrupted`,
/// exit 130 or 143); a second one exits at once, for a run that takes too long to stop.
final class SignalTrap: @unchecked Sendable {
    private let lock = NSLock()
    private var sources: [DispatchSourceSignal] = []
    private var received: Int32?

    /// The first signal received, if any.
    var signal: Int32? { lock.withLock { received } }

    init(onFirst: @escaping @Sendable (Int32) -> Void) {
        for number in [SIGINT, SIGTERM] {
            Foundation.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let first = lock.withLock { () -> Bool in
                    guard received == nil else { return false }
                    received = number
                    return true
                }
                if first {
                    onFirst(number)
                } else {
                    Console.error("batchfetch: second signal, exiting now (partials are kept)")
                    _exit(128 + number)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
