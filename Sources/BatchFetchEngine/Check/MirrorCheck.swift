import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// One mirror's entry in a `check` report: what it showed and the verdict.
public struct MirrorCheck: Codable, Sendable, Equatable {
    public var mirrorIndex: Int
    /// The mirror URL as it may be printed.
    public var url: String
    public var status: MirrorVerdict.Status
    public var method: String
    public var httpStatus: Int?
    public var size: Int64?
    public var etag: String?
    public var lastModified: String?
    public var sha256: String?
    public var differences: [MirrorVerdict.Difference]?
    /// Why a mirror was unreachable.
    public var message: String?

    init(mirrorIndex: Int, url: String, observation: MirrorObservation, verdict: MirrorVerdict) {
        self.mirrorIndex = mirrorIndex
        self.url = url
        status = verdict.status
        method = observation.method
        httpStatus = observation.httpStatus
        size = observation.size
        etag = observation.etag
        lastModified = observation.lastModified
        sha256 = observation.sha256
        differences = verdict.differences.isEmpty ? nil : verdict.differences
        if case .unreachable(let reason) = observation.outcome { message = reason }
    }

    enum CodingKeys: String, CodingKey {
        case mirrorIndex = "mirror_index", url, status, method, httpStatus = "http_status", size, etag
        case lastModified = "last_modified", sha256, differences, message
    }
}
