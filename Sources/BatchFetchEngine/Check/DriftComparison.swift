import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import Foundation

/// What a mirror should show: from the lock when there is one (size, sha256, and that mirror's
/// ETag and Last-Modified), else from the manifest (size, sha256).
package struct MirrorExpectation: Sendable, Equatable {
    package var size: Int64?
    package var sha256: String?
    package var etag: String?
    package var lastModified: String?

    package init(size: Int64?, sha256: String?, etag: String? = nil, lastModified: String? = nil) {
        self.size = size
        self.sha256 = sha256
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// The verdict on one mirror, for the `check` report.
public struct MirrorVerdict: Sendable, Equatable {
    public enum Status: String, Sendable, Codable, CaseIterable {
        case ok, drift, missing, unreachable
    }

    public struct Difference: Sendable, Equatable, Codable {
        public var field: String
        public var expected: String
        public var actual: String

        public init(field: String, expected: String, actual: String) {
            self.field = field
            self.expected = expected
            self.actual = actual
        }
    }

    public var status: Status
    public var differences: [Difference]

    /// Compares an observation with what was expected. Size and sha256 are the content; ETag and
    /// Last-Modified only stand for it. With --deep the content itself was hashed, so a new
    /// ETag or date over the same bytes is not drift (a re-upload, a moved file); without
    /// --deep a changed validator is the only sign of changed content and counts.
    package static func judge(_ observation: MirrorObservation, expected: MirrorExpectation) -> MirrorVerdict {
        switch observation.outcome {
        case .missing: return MirrorVerdict(status: .missing, differences: [])
        case .unreachable: return MirrorVerdict(status: .unreachable, differences: [])
        case .answered: break
        }
        var differences: [Difference] = []
        func compare(_ field: String, _ expected: String?, _ actual: String?) {
            if let expected, let actual, expected != actual {
                differences.append(Difference(field: field, expected: expected, actual: actual))
            }
        }
        compare("size", expected.size.map(String.init), observation.size.map(String.init))
        compare("sha256", expected.sha256, observation.sha256)
        if !observation.hashed {
            compare("etag", expected.etag, observation.etag)
            compare("last_modified", expected.lastModified, observation.lastModified)
        }
        return MirrorVerdict(status: differences.isEmpty ? .ok : .drift, differences: differences)
    }
}
