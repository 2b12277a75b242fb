import BatchFetchSpec
import Foundation

extension Job {
    /// This job with the digests that its `checksums_from` sum file (published by that job at
    /// `path`) lists for it, matched by the dest's file name, the dest path, or a URL's last
    /// path segment. A sum file without an entry, or one that contradicts a digest the manifest
    /// pins, fails the job before any download.
    func withChecksums(fromSumFileAt path: String) -> Result<Job, DownloadFailure> {
        let source = checksumsFrom ?? "?"
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(DownloadFailure(.checksumUnavailable, "cannot read the sum file \(path) published by '\(source)'"))
        }
        let sums = SumFile(text: String(decoding: data, as: UTF8.self))
        let dest = self.dest.resolved
        var names = [dest, (dest as NSString).lastPathComponent]
        for url in urls {
            if let last = URL(string: url.resolved)?.lastPathComponent, !last.isEmpty, last != "/" { names.append(last) }
        }
        let listed = sums.checksums(for: names)
        guard !listed.isEmpty else {
            return .failure(DownloadFailure(
                .checksumUnavailable,
                "the sum file of '\(source)' (\(sums.entries.count) entries) has no entry for '\((dest as NSString).lastPathComponent)'"))
        }
        var job = self
        for checksum in listed {
            if let pinned = checksums.first(where: { $0.algorithm == checksum.algorithm }) {
                guard pinned == checksum else {
                    return .failure(DownloadFailure(
                        .checksumMismatch, "the manifest pins \(pinned) but the sum file of '\(source)' lists \(checksum)"))
                }
            } else {
                job.checksums.append(checksum)
            }
        }
        return .success(job)
    }
}
