import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import Foundation

extension Job {
    /// This job with the digests that the sum file published by `sumJob` at `path` lists for it
    /// (see ``withChecksums(from:of:)``). An unreadable sum file fails the job before any download.
    func withChecksums(fromSumFileAt path: String, of sumJob: Job) -> Result<Job, BatchFetchError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(BatchFetchError(.checksumUnavailable, "cannot read the sum file \(path) published by '\(sumJob.id)'"))
        }
        return withChecksums(from: SumFile(text: String(decoding: data, as: UTF8.self)), of: sumJob)
    }

    /// This job with the digests `sums` (the sum file of `sumJob`) lists for it: the entry whose
    /// path is this job's URL path relative to the sum file's URL, else its dest relative to the
    /// sum file's dest, else the only entry with its file name (``SumFile/match(paths:fileName:)``).
    /// No entry, several candidates, or a digest that contradicts one the manifest pins fail the
    /// job before any download.
    func withChecksums(from sums: SumFile, of sumJob: Job) -> Result<Job, BatchFetchError> {
        let fileName = (dest.resolved as NSString).lastPathComponent
        let listed: [Checksum]
        switch sums.match(paths: pathsRelative(toSumFileOf: sumJob), fileName: fileName) {
        case .success(let match):
            listed = match.checksums
        case .failure(.notListed):
            return .failure(BatchFetchError(
                .checksumUnavailable, "the sum file of '\(sumJob.id)' (\(sums.entries.count) entries) has no entry for '\(dest.redacted)'"))
        case .failure(.ambiguous(let candidates)):
            return .failure(BatchFetchError(
                .checksumUnavailable,
                "the sum file of '\(sumJob.id)' lists several files named '\(fileName)' (\(candidates.joined(separator: ", "))) "
                    + "and none at '\(dest.redacted)' relative to it; give the job a dest that mirrors the sum file's layout"))
        }
        var job = self
        for checksum in listed {
            if let pinned = checksums.first(where: { $0.algorithm == checksum.algorithm }) {
                guard pinned == checksum else {
                    return .failure(BatchFetchError(
                        .checksumMismatch, "the manifest pins \(pinned) but the sum file of '\(sumJob.id)' lists \(checksum)"))
                }
            } else {
                job.checksums.append(checksum)
            }
        }
        return .success(job)
    }

    /// Where this job's file may be listed in `sumJob`'s sum file, most trusted first: for each
    /// pair of mirrors on the same server, the URL path below the sum file's directory
    /// (`https://m/debian/SHA256SUMS` lists `https://m/debian/netboot/x.tar.gz` as
    /// `netboot/x.tar.gz`), then the dest below the sum file's dest directory.
    func pathsRelative(toSumFileOf sumJob: Job) -> [String] {
        var paths: [String] = []
        for sumURL in sumJob.urls.compactMap({ URLComponents(string: $0.resolved) }) {
            let directory = (sumURL.percentEncodedPath as NSString).deletingLastPathComponent
            let prefix = directory.hasSuffix("/") ? directory : directory + "/"
            for url in urls.compactMap({ URLComponents(string: $0.resolved) })
            where url.scheme?.lowercased() == sumURL.scheme?.lowercased() && url.host?.lowercased() == sumURL.host?.lowercased()
                && url.port == sumURL.port && url.percentEncodedPath.hasPrefix(prefix) {
                let relative = String(url.percentEncodedPath.dropFirst(prefix.count))
                paths.append(relative.removingPercentEncoding ?? relative)
            }
        }
        let sumDirectory = (sumJob.dest.resolved as NSString).deletingLastPathComponent
        if sumDirectory.isEmpty {
            paths.append(dest.resolved)
        } else if dest.resolved.hasPrefix(sumDirectory + "/") {
            paths.append(String(dest.resolved.dropFirst(sumDirectory.count + 1)))
        }
        return paths
    }
}
