import Foundation
import NIOConcurrencyHelpers

/// SIGINT and SIGTERM for `run`: the first one asks the run to stop (report `interrupted`,
/// exit 130 or 143); a second one exits at once, for a run that takes too long to stop.
///
/// The same signal again within ``repeatWindow`` is the same request, not a second one:
/// coreutils `timeout` (and Ctrl-C in a shell) signal both the process and its process group,
/// so one request often arrives twice; taking that as "exit now" lost the report in one run of
/// six under `timeout`.
///
/// Not `Sendable` (Dispatch signal sources are not): it stays with the command that made it;
/// the handlers share only `state`, which is.
final class SignalTrap {
    static let repeatWindow = 1.0

    private var sources: [DispatchSourceSignal] = []
    /// The first signal received, and when.
    private let state = NIOLockedValueBox<(received: Int32?, at: DispatchTime)>((nil, DispatchTime.now()))

    /// The first signal received, if any.
    var signal: Int32? { state.withLockedValue { $0.received } }

    init(onFirst: @escaping @Sendable (Int32) -> Void) {
        for number in [SIGINT, SIGTERM] {
            Foundation.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            let state = self.state
            source.setEventHandler {
                let now = DispatchTime.now()
                let verdict = state.withLockedValue { state -> Verdict in
                    guard let received = state.received else {
                        state = (number, now)
                        return .first
                    }
                    let elapsed = Double(now.uptimeNanoseconds - state.at.uptimeNanoseconds) / 1e9
                    return received == number && elapsed < SignalTrap.repeatWindow ? .repeated : .second
                }
                switch verdict {
                case .first:
                    onFirst(number)
                case .repeated:
                    break
                case .second:
                    Console.error("batchfetch: second signal, exiting now (partials are kept)")
                    _exit(128 + number)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    private enum Verdict {
        case first, repeated, second
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
