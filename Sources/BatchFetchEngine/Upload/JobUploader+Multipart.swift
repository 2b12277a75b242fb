import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchObjectStore
import BatchFetchSpec
import BatchFetchState
import Foundation

/// S3's multipart upload, for a file above ``threshold`` sent to an `s3://` target
/// (Docs/ObjectStores.md, "Uploads"): parts of ``partSize(for:)`` bytes, numbered from 1.
enum S3Multipart {
    static let threshold: Int64 = 64 << 20
    /// S3 takes parts of at least 5 MiB (but the last) and at most 10,000 of them.
    static let minimumPart: Int64 = 16 << 20
    static let maximumParts: Int64 = 10_000
    /// Parts sent at once, at most (and at most the run's `per_host`).
    static let parallelParts = 4

    /// Whole MiB, at least ``minimumPart``, few enough for ``maximumParts``.
    static func partSize(for size: Int64) -> Int64 {
        let needed = (size + maximumParts - 1) / maximumParts
        return max(minimumPart, (needed + (1 << 20) - 1) / (1 << 20) * (1 << 20))
    }

    /// The parts of a file of `size` bytes: number, offset and length.
    static func parts(size: Int64, partSize: Int64) -> [(number: Int, offset: Int64, length: Int64)] {
        stride(from: Int64(0), to: size, by: Int(partSize)).enumerated().map { index, offset in
            (index + 1, offset, min(partSize, size - offset))
        }
    }

    /// The body of CompleteMultipartUpload: every part's number and ETag, in order.
    static func completion(_ etags: [(number: Int, etag: String)]) -> Data {
        let parts = etags.sorted { $0.number < $1.number }.map { part in
            "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(escaped(part.etag))</ETag></Part>"
        }
        return Data(("<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" + parts.joined()
            + "</CompleteMultipartUpload>").utf8)
    }

    /// What to do first about the upload an earlier run may have begun (the state store's
    /// `record`) for a file with this sha256, size and part size — a pure decision, tested
    /// without a store (`S3MultipartPlanTests`).
    enum FirstStep: Equatable {
        /// No earlier upload: begin one.
        case begin
        /// The earlier upload is of this very file, cut the same way: ask the store which parts
        /// it holds.
        case listParts(uploadID: String)
        /// The earlier upload is of other content or other parts: abort it, then begin.
        case abortThenBegin(uploadID: String)
    }

    static func firstStep(record: StateCache.MultipartRecord?, sha256: String, size: Int64, partSize: Int64) -> FirstStep {
        guard let record else { return .begin }
        guard record.sha256 == sha256, record.size == size, record.partSize == partSize else {
            return .abortThenBegin(uploadID: record.uploadID)
        }
        return .listParts(uploadID: record.uploadID)
    }

    /// What the store's listing of an earlier upload's parts means: the parts it holds whole
    /// (their ETags, by number) and those still to send — or, when it could not be listed,
    /// abort it and begin again. A held part of another length is sent again.
    enum Resumption: Equatable {
        case resume(done: [Int: String])
        case abortThenBegin
    }

    static func resumption(listed: [Int: (etag: String, size: Int64)]?, size: Int64, partSize: Int64) -> Resumption {
        guard let listed else { return .abortThenBegin }
        var done: [Int: String] = [:]
        for part in parts(size: size, partSize: partSize) {
            if let held = listed[part.number], held.size == part.length { done[part.number] = held.etag }
        }
        return .resume(done: done)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension JobUploader {
    /// Sends the file to an object store in parts: begins a multipart upload (or takes up the one
    /// an earlier run began for this very file, asking the store which parts it holds), sends
    /// the missing parts a few at a time, each retried as the job says, and completes the upload.
    /// An interrupted run keeps the upload for the next; a failure that is not an interruption
    /// aborts it. Memory stays bounded: each part streams from the file as a whole file does.
    func sendInParts(_ opened: OpenedSource, mirror: MirrorURL, stateKey: String) async -> JobResult {
        guard let store = mirror.store else { return failed(BatchFetchError(.connection, "not an object store URL")) }
        let source = opened.source
        let partSize = S3Multipart.partSize(for: source.size)
        let state = context.state
        func url(_ query: [(String, String)]) -> URL {
            store.configuration.url(bucket: store.bucket, key: store.key, query: query) ?? mirror.url
        }

        // An upload an earlier run began for this file, with the parts the store holds.
        var uploadID: String?
        var done: [Int: String] = [:]
        switch S3Multipart.firstStep(record: state.multipartUpload(stateKey), sha256: source.sha256, size: source.size,
                                     partSize: partSize) {
        case .begin:
            break
        case .listParts(let earlier):
            switch S3Multipart.resumption(listed: await listParts(earlier, url: url), size: source.size, partSize: partSize) {
            case .resume(let held):
                (uploadID, done) = (earlier, held)
            case .abortThenBegin:
                await abort(opened, earlier, url: url, mirror: mirror)
                state.recordMultipartUpload(stateKey, nil)
            }
        case .abortThenBegin(let earlier):
            await abort(opened, earlier, url: url, mirror: mirror)
            state.recordMultipartUpload(stateKey, nil)
        }
        if uploadID == nil {
            var begin = Sending(url: url([("uploads", "")]), displayURL: mirror.printed, method: "POST", payload: .bytes(Data()))
            switch await send(opened, &begin) {
            case .failure(let failure):
                return failed(failure)
            case .success(let (_, body)):
                guard let id = S3XML(body)?.values["UploadId"], !id.isEmpty else {
                    return failed(BatchFetchError(.httpStatus, "the store did not begin a multipart upload: \(String(decoding: body.prefix(300), as: UTF8.self))"))
                }
                uploadID = id
                state.recordMultipartUpload(stateKey, .init(uploadID: id, sha256: source.sha256, size: source.size, partSize: partSize))
            }
        }
        let id = uploadID!

        let plan = S3Multipart.parts(size: source.size, partSize: partSize)
        progress.moved(to: plan.filter { done[$0.number] != nil }.reduce(0) { $0 + $1.length }, total: source.size)
        let missing = plan.filter { done[$0.number] == nil }
        var failure: BatchFetchError?
        var sent: Int64 = 0
        await withTaskGroup(of: (Int, Int64, Result<String, BatchFetchError>).self) { group in
            var next = missing.makeIterator()
            func start() {
                guard failure == nil, let part = next.next() else { return }
                group.addTask {
                    var sending = Sending(url: url([("partNumber", "\(part.number)"), ("uploadId", id)]), displayURL: mirror.printed,
                                          method: "PUT", payload: .part(offset: part.offset, length: part.length))
                    let outcome = await self.send(opened, &sending)
                    return (part.number, sending.bytesSent, outcome.flatMap { head, _ in
                        head.header("etag").map { .success($0) } ?? .failure(BatchFetchError(.httpStatus, "part \(part.number) has no ETag"))
                    })
                }
            }
            for _ in 0..<min(S3Multipart.parallelParts, max(1, context.perHost)) { start() }
            while let (number, bytes, outcome) = await group.next() {
                sent += bytes
                switch outcome {
                case .success(let etag): done[number] = etag
                case .failure(let reason): failure = failure ?? reason
                }
                start()
            }
        }
        if let failure {
            // Interrupted: the next run takes the upload up; any other end gives it up.
            if failure.code != .interrupted {
                await abort(opened, id, url: url, mirror: mirror)
                state.recordMultipartUpload(stateKey, nil)
            }
            var result = failed(failure)
            result.bytesTransferred = sent
            return result
        }

        var complete = Sending(url: url([("uploadId", id)]), displayURL: mirror.printed, method: "POST",
                               payload: .bytes(S3Multipart.completion(done.map { ($0.key, $0.value) })))
        complete.headers = [("Content-Type", "application/xml")]
        let completed = await send(opened, &complete)
        var result = result(.uploaded, source: source, url: mirror.printed)
        result.bytesTransferred = sent
        result.attempts = complete.attempts.records
        switch completed {
        case .failure(let reason):
            result.status = reason.code == .interrupted ? .interrupted : .failed
            result.failure = reason
            return result
        case .success(let (head, body)):
            let answer = S3XML(body)
            if let error = answer?.error {
                // S3 may answer 200 and then an error in the body; the parts stay for a rerun.
                result.status = .failed
                result.failure = BatchFetchError(.httpStatus, "completing the multipart upload: \(error)")
                return result
            }
            result.httpStatus = head.status
            let etag = answer?.values["ETag"] ?? head.header("etag")
            result.etag = etag
            state.recordMultipartUpload(stateKey, nil)
            state.record(stateKey, status: opened.status, digests: ["sha256": source.sha256], urlSHA256: mirror.identity,
                         etag: etag, lastModified: nil)
            enterCache(opened)
            return result
        }
    }

    /// The parts the store holds of upload `id` (ListParts, every page), by number; nil when it
    /// cannot say (the upload is gone, or the store did not answer).
    private func listParts(_ id: String, url: ([(String, String)]) -> URL) async -> [Int: (etag: String, size: Int64)]? {
        let probe = MirrorProbe(job: job, network: network, hosts: context.hosts)
        var parts: [Int: (etag: String, size: Int64)] = [:]
        var marker: String?
        repeat {
            let page = url([("uploadId", id)] + (marker.map { [("part-number-marker", $0)] } ?? []))
            guard case .success(let data) = await probe.fetch(mirror: 0, limit: 8 << 20, url: page),
                  let answer = S3XML(data), answer.root.hasPrefix("ListParts") else { return nil }  // moto: ListPartsResponse
            for part in answer.records["Part"] ?? [] {
                if let number = part["PartNumber"].flatMap(Int.init), let etag = part["ETag"], let size = part["Size"].flatMap(Int64.init) {
                    parts[number] = (etag, size)
                }
            }
            marker = answer.values["IsTruncated"] == "true" ? answer.values["NextPartNumberMarker"] : nil
        } while marker != nil
        return parts
    }

    /// Gives up upload `id` (AbortMultipartUpload), once, whatever the answer: the store drops
    /// its parts (a bucket's lifecycle rule cleans up what an abort could not reach).
    private func abort(_ opened: OpenedSource, _ id: String, url: ([(String, String)]) -> URL, mirror: MirrorURL) async {
        var sending = Sending(url: url([("uploadId", id)]), displayURL: mirror.printed, method: "DELETE", payload: .bytes(Data()))
        _ = await send(opened, &sending)
    }
}
