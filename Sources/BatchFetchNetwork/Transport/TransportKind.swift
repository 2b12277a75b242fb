import BatchFetchFiles
import BatchFetchObjectStore
import Foundation

/// The HTTP clients batchfetch can download with.
public enum TransportKind: String, Sendable, CaseIterable {
    /// SwiftNIO's AsyncHTTPClient: backpressure, so whole bodies stream with bounded memory.
    case nio
    /// Foundation's URLSession (libcurl on Linux): no backpressure, so bodies come in bounded
    /// ranges; the transport Docs/Contracts.md §5 describes.
    case urlsession

    /// `BATCHFETCH_TRANSPORT` (`nio` or `urlsession`) when set, else URLSession, the transport
    /// the contracts (Docs/Contracts.md §5) are written around; nio is faster on loopback and LAN
    /// mirrors (bench/results/downloads.md), where the README says to choose it.
    public static var `default`: TransportKind {
        ProcessInfo.processInfo.environment["BATCHFETCH_TRANSPORT"].flatMap(TransportKind.init(rawValue:)) ?? .urlsession
    }

    /// The process's shared transport of this kind for a `per_host` limit.
    public func shared(perHost: Int) -> any HTTPTransport {
        switch self {
        case .nio: AsyncHTTPClientTransport.shared(maximumConnectionsPerHost: perHost)
        case .urlsession: URLSessionTransport.shared(maximumConnectionsPerHost: perHost)
        }
    }
}
