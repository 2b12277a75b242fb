@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// The download decisions, tested without sockets or files.
@Suite struct DownloadStateMachineTests {
    static let a = "https://a.example/f.bin", b = "https://b.example/f.bin"

    static func machine(mirrors: [String] = [a], size: Int64? = nil, pinned: Bool = false, retries: Int = 2,
                        insecure: Bool = false) -> DownloadStateMachine {
        DownloadStateMachine(configuration: .init(
            mirrors: mirrors, expectedSize: size,
            checksumPinned: pinned, retries: retries, backoff: 1, backoffMax: 8, allowInsecureRedirect: insecure))
    }

    static func head(_ status: Int, _ headers: [String: String] = [:]) -> TransportResponseHead {
        TransportResponseHead(status: status, headers: headers)
    }

    static func sidecar(url: String = a, etag: String? = "\"v1\"", lastModified: String? = nil, total: Int64? = 1000) -> Sidecar {
        Sidecar(url: url, urlSHA256: Digester.sha256Hex(url), etag: etag, lastModified: lastModified, totalSize: total)
    }

    static func request(_ url: String = a, mirror: Int = 0, from start: Int64? = nil, ifRange: String? = nil) -> PlannedRequest {
        PlannedRequest(mirrorIndex: mirror, url: url, rangeStart: start, ifRange: ifRange)
    }

    @Test func freshStartSendsAPlainGet() {
        var machine = Self.machine()
        #expect(machine.phase == .idle(revalidating: nil))
        #expect(machine.start(local: nil) == .send(Self.request()))
        #expect(machine.phase == .requesting(Self.request(), .attempt(resuming: false)))
    }

    @Test func thePhaseFollowsTheActions() {
        var machine = Self.machine(mirrors: [Self.a, Self.b], pinned: true)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.phase == .receiving(end: 1000))
        _ = machine.bodyFinished(.complete, flushed: 1000)
        #expect(machine.phase == .verifying)
        _ = machine.verificationFailed(BatchFetchError(.checksumMismatch, "bad"))
        #expect(machine.phase == .requesting(Self.request(Self.b, mirror: 1), .attempt(resuming: true)))
        _ = machine.headReceived(Self.head(404))
        #expect(machine.phase == .finished)
    }

    @Test func partialWithStrongETagResumesWithIfRange() {
        var machine = Self.machine()
        let action = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        #expect(action == .send(Self.request(from: 400, ifRange: "\"v1\"")))
    }

    @Test func partialWithLastModifiedOnlyResumesWithThatDate() {
        var machine = Self.machine()
        let date = "Thu, 01 Jan 2026 00:00:00 GMT"
        let action = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar(etag: nil, lastModified: date)))
        #expect(action == .send(Self.request(from: 400, ifRange: date)))
    }

    @Test func partialWithoutValidatorOrTooLargeRestarts() {
        var noValidator = Self.machine()
        #expect(noValidator.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar(etag: nil))) == .send(Self.request()))
        var tooLarge = Self.machine()
        #expect(tooLarge.start(local: LocalPartial(bytes: 1001, sidecar: Self.sidecar())) == .send(Self.request()))
        var noSidecar = Self.machine()
        #expect(noSidecar.start(local: LocalPartial(bytes: 400, sidecar: nil)) == .send(Self.request()))
    }

    @Test func twoHundredToARangeRequestRestartsFromZeroWithThatBody() {
        var machine = Self.machine()
        _ = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        let action = machine.headReceived(Self.head(200, ["Content-Length": "1200", "ETag": "\"v2\""]))
        guard case .receive(let plan) = action else { Issue.record("expected receive, got \(action)"); return }
        #expect(plan.offset == 0)
        #expect(plan.end == 1200)
        #expect(plan.sidecar?.etag == "\"v2\"")
        #expect(machine.resumedFrom == nil)
    }

    @Test func matchingPartialContentContinuesAtTheOffset() {
        var machine = Self.machine()
        _ = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        let action = machine.headReceived(Self.head(206, ["Content-Range": "bytes 400-999/1000", "ETag": "\"v1\""]))
        #expect(action == .receive(BodyPlan(offset: 400, end: 1000, sidecar: nil)))
        #expect(machine.resumedFrom == 400)
    }

    @Test func partialContentAtTheWrongOffsetRestarts() {
        var machine = Self.machine()
        _ = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        let action = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-999/1000"]))
        #expect(action == .sendAfter(Self.request(), RetryDelay(seconds: 0, jitter: false)))
        #expect(machine.attempts.last?.failure?.code == .rangeNotHonoured)
    }

    @Test func partialContentWithAnotherETagIsRemoteChanged() {
        var machine = Self.machine()
        _ = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        let action = machine.headReceived(Self.head(206, ["Content-Range": "bytes 400-999/1000", "ETag": "\"v2\""]))
        #expect(action == .sendAfter(Self.request(), RetryDelay(seconds: 0, jitter: false)))
        #expect(machine.attempts.last?.failure?.code == .remoteChanged)
    }

    @Test func partialContentMustProveItContinuesTheSameFile() {
        let date = "Thu, 01 Jan 2026 00:00:00 GMT", later = "Thu, 01 Jan 2026 01:00:00 GMT"
        let cases: [(Sidecar, [String: String])] = [
            // A server ignoring If-Range serves the new file's bytes with its new Last-Modified.
            (Self.sidecar(etag: nil, lastModified: date), ["Content-Range": "bytes 400-999/1000", "Last-Modified": later]),
            (Self.sidecar(etag: nil, lastModified: date), ["Content-Range": "bytes 400-999/1000"]),
            // The ETag it continues is missing, or the size changed.
            (Self.sidecar(), ["Content-Range": "bytes 400-999/1000"]),
            (Self.sidecar(), ["Content-Range": "bytes 400-1199/1200", "ETag": "\"v1\""]),
        ]
        for (sidecar, headers) in cases {
            var machine = Self.machine()
            _ = machine.start(local: LocalPartial(bytes: 400, sidecar: sidecar))
            #expect(machine.headReceived(Self.head(206, headers)) == .sendAfter(Self.request(), RetryDelay(seconds: 0, jitter: false)),
                    "\(headers)")
            #expect(machine.attempts.last?.failure?.code == .remoteChanged)
            #expect(machine.resumedFrom == nil)
        }
        var same = Self.machine()
        _ = same.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar(etag: nil, lastModified: date)))
        #expect(same.headReceived(Self.head(206, ["Content-Range": "bytes 400-999/1000", "Last-Modified": date]))
            == .receive(BodyPlan(offset: 400, end: 1000, sidecar: nil)))
    }

    @Test func rangeNotSatisfiableWithACompletePartialIsPublished() {
        var complete = Self.machine()
        _ = complete.start(local: LocalPartial(bytes: 1000, sidecar: Self.sidecar()))
        #expect(complete.headReceived(Self.head(416, ["Content-Range": "bytes */1000"])) == .verifyPartial)

        var incomplete = Self.machine()
        _ = incomplete.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        #expect(incomplete.headReceived(Self.head(416, ["Content-Range": "bytes */300"])) == .send(Self.request()))
    }

    @Test func redirectsAreFollowedAndRecorded() {
        var machine = Self.machine()
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(302, ["Location": "/other/f.bin"])) == .send(Self.request("https://a.example/other/f.bin")))
        #expect(machine.headReceived(Self.head(301, ["Location": "https://c.example/f.bin"])) == .send(Self.request("https://c.example/f.bin")))
        #expect(machine.redirects == ["https://a.example/other/f.bin", "https://c.example/f.bin"])
    }

    @Test func httpsToHttpRedirectIsRefusedUnlessAllowed() {
        var refused = Self.machine()
        _ = refused.start(local: nil)
        guard case .next(.fail(let failure)) = refused.headReceived(Self.head(302, ["Location": "http://a.example/f.bin"])) else {
            Issue.record("followed an insecure redirect")
            return
        }
        #expect(failure.code == .redirectRefused)

        var allowed = Self.machine(insecure: true)
        _ = allowed.start(local: nil)
        #expect(allowed.headReceived(Self.head(302, ["Location": "http://a.example/f.bin"])) == .send(Self.request("http://a.example/f.bin")))
    }

    @Test func moreThanTenRedirectsFail() {
        var machine = Self.machine()
        _ = machine.start(local: nil)
        for hop in 1...10 {
            #expect(machine.headReceived(Self.head(307, ["Location": "/hop\(hop)"])) == .send(Self.request("https://a.example/hop\(hop)")))
        }
        #expect(machine.headReceived(Self.head(307, ["Location": "/hop11"])).failureCode == .tooManyRedirects)
    }

    @Test func clientErrorsFailTheMirrorAtOnceAndMoveToTheNext() {
        var single = Self.machine(retries: 5)
        _ = single.start(local: nil)
        #expect(single.headReceived(Self.head(404)).failureCode == .httpStatus)
        #expect(single.attempts.count == 1)

        var mirrored = Self.machine(mirrors: [Self.a, Self.b], retries: 5)
        _ = mirrored.start(local: nil)
        #expect(mirrored.headReceived(Self.head(403)) == .send(Self.request(Self.b, mirror: 1)))
    }

    @Test func serverErrorsRetryWithBackoffThenFail() {
        var machine = Self.machine(retries: 2)
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(503)) == .sendAfter(Self.request(), RetryDelay(seconds: 1, jitter: true)))
        #expect(machine.headReceived(Self.head(500)) == .sendAfter(Self.request(), RetryDelay(seconds: 2, jitter: true)))
        #expect(machine.headReceived(Self.head(502)).failureCode == .httpStatus)
        #expect(machine.attempts.count == 3)
    }

    @Test func backoffIsCappedAtBackoffMax() {
        var machine = Self.machine(retries: 10)
        _ = machine.start(local: nil)
        var delays: [Double] = []
        for _ in 0..<6 {
            if case .next(.sendAfter(_, let delay)) = machine.headReceived(Self.head(500)) { delays.append(delay.seconds) }
        }
        #expect(delays == [1, 2, 4, 8, 8, 8])
    }

    @Test func retryAfterInSecondsAndHTTPDateIsHonoured() {
        var seconds = Self.machine()
        _ = seconds.start(local: nil)
        #expect(seconds.headReceived(Self.head(429, ["Retry-After": "3"])) == .sendAfter(Self.request(), RetryDelay(seconds: 3, jitter: false)))

        var date = Self.machine()
        _ = date.start(local: nil)
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let action = date.headReceived(Self.head(503, ["Retry-After": "Thu, 01 Jan 2026 00:00:05 GMT"]), now: now)
        #expect(action == .sendAfter(Self.request(), RetryDelay(seconds: 5, jitter: false)))
    }

    @Test func retryAfterBeyondTheDeadlineFails() {
        var machine = Self.machine()
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(503, ["Retry-After": "120"]), remaining: 30).failureCode == .deadlineExceeded)
    }

    @Test func aRetryAfterOverTheCapOrTheDeadlineFailsOverToTheNextMirror() {
        for (retryAfter, remaining, code) in [("86400", nil, ErrorCode.httpStatus), ("120", 30.0, .deadlineExceeded)] {
            var machine = Self.machine(mirrors: [Self.a, Self.b])
            _ = machine.start(local: nil)
            #expect(machine.headReceived(Self.head(503, ["Retry-After": retryAfter]), remaining: remaining)
                == .send(Self.request(Self.b, mirror: 1)))
            #expect(machine.attempts.last?.failure?.code == code)
        }
    }

    @Test func tlsFailuresAreNotRetriedButFailOver() {
        var machine = Self.machine(mirrors: [Self.a, Self.b], retries: 4)
        _ = machine.start(local: nil)
        #expect(machine.requestFailed(.tls("certificate not trusted")) == .send(Self.request(Self.b, mirror: 1)))
        #expect(machine.requestFailed(.tls("certificate not trusted")).failureCode == .tls)
        #expect(machine.attempts.count == 2)
    }

    @Test func announcedLengthOtherThanTheExpectedSizeFailsBeforeDownloading() {
        var machine = Self.machine(size: 1000)
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(200, ["Content-Length": "1100"])).failureCode == .sizeMismatch)
    }

    @Test func shortBodyResumesFromWhatWasWritten() {
        var machine = Self.machine()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        let action = machine.bodyFinished(.failed(.connection("reset")), flushed: 600)
        #expect(action == .sendAfter(Self.request(from: 600, ifRange: "\"v1\""), RetryDelay(seconds: 1, jitter: true)))
        #expect(machine.attempts.count == 1)
        #expect(machine.attempts[0].failure?.code == .connection)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 600-999/1000", "ETag": "\"v1\""]))
        let complete = machine.bodyFinished(.complete, flushed: 1000)
        #expect(complete == .verify)
    }

    @Test func shortBodyWithoutValidatorRestarts() {
        var machine = Self.machine()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "W/\"weak\""]))
        #expect(machine.bodyFinished(.complete, flushed: 600) == .sendAfter(Self.request(), RetryDelay(seconds: 1, jitter: true)))
    }

    @Test func overflowResumesImmediatelyWithoutCountingAFailure() {
        var machine = Self.machine(retries: 0)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.overflow, flushed: 300)
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 300, rangeEnd: 999, ifRange: "\"v1\"")))
    }

    @Test func afterAnOverflowTheRestComesInBoundedRanges() {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: [Self.a], expectedSize: nil, checksumPinned: false,
            retries: 0, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, pauseChunk: 100))
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "250", "ETag": "\"v1\""]))
        let first = PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 30, rangeEnd: 129, ifRange: "\"v1\"")
        #expect(machine.bodyFinished(.overflow, flushed: 30) == .send(first))
        #expect(first.rangeHeader == "bytes=30-129")
        #expect(machine.headReceived(Self.head(206, ["Content-Range": "bytes 30-129/250", "ETag": "\"v1\""]))
            == .receive(BodyPlan(offset: 30, end: 130, sidecar: nil)))
        let second = PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 130, rangeEnd: 229, ifRange: "\"v1\"")
        #expect(machine.bodyFinished(.complete, flushed: 130) == .send(second))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 130-229/250", "ETag": "\"v1\""]))
        let last = PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 230, rangeEnd: 249, ifRange: "\"v1\"")
        #expect(machine.bodyFinished(.complete, flushed: 230) == .send(last))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 230-249/250", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 250) == .verify)
        // A pause is not a resume: nothing came from an earlier run or a failed attempt.
        #expect(machine.resumedFrom == nil)
    }

    @Test func pacedDownloadsAskForBoundedRangesFromTheStart() {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: [Self.a], expectedSize: nil, checksumPinned: false,
            retries: 0, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, pacedChunk: 100))
        #expect(machine.start(local: nil) == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 0, rangeEnd: 99)))
        guard case .receive(let plan) = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/150", "ETag": "\"v1\""])) else {
            Issue.record("first range not accepted")
            return
        }
        #expect(plan.offset == 0 && plan.end == 100 && plan.sidecar?.etag == "\"v1\"" && plan.sidecar?.totalSize == 150)
        #expect(machine.bodyFinished(.complete, flushed: 100)
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 100, rangeEnd: 149, ifRange: "\"v1\"")))
        #expect(machine.headReceived(Self.head(206, ["Content-Range": "bytes 100-149/150", "ETag": "\"v1\""]))
            == .receive(BodyPlan(offset: 100, end: 150, sidecar: nil)))
        #expect(machine.bodyFinished(.complete, flushed: 150) == .verify)
    }

    @Test func pacedRequestAnsweredWithTheWholeFileIsAccepted() {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: [Self.a], expectedSize: nil, checksumPinned: false,
            retries: 0, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, pacedChunk: 100))
        _ = machine.start(local: nil)
        guard case .receive(let plan) = machine.headReceived(Self.head(200, ["Content-Length": "150"])) else {
            Issue.record("200 not accepted")
            return
        }
        #expect(plan.offset == 0 && plan.end == 150)
        #expect(machine.bodyFinished(.complete, flushed: 150) == .verify)
    }

    @Test func overflowWithoutAValidatorStartsOverAndCountsIt() {
        var machine = Self.machine(retries: 1)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000"]))
        #expect(machine.bodyFinished(.overflow, flushed: 300) == .sendAfter(Self.request(), RetryDelay(seconds: 0, jitter: false)))
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000"]))
        #expect(machine.bodyFinished(.overflow, flushed: 300).failureCode == .connection)
    }

    @Test func bodyLongerThanExpectedFailsWithSizeMismatch() {
        var machine = Self.machine(size: 1000)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, [:]))
        #expect(machine.bodyFinished(.tooLong, flushed: 1000).failureCode == .sizeMismatch)
    }

    @Test func checksumMismatchMovesToTheNextMirrorFromZero() {
        var machine = Self.machine(mirrors: [Self.a, Self.b], pinned: true)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        let next = machine.verificationFailed(BatchFetchError(.checksumMismatch, "bad"))
        #expect(next == .send(Self.request(Self.b, mirror: 1)))
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000"]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        #expect(machine.verificationFailed(BatchFetchError(.checksumMismatch, "bad")).failureCode == .checksumMismatch)
    }

    @Test func partialCrossesMirrorsOnlyWithAStrongETagOrAPinnedChecksum() {
        let date = "Thu, 01 Jan 2026 00:00:00 GMT"
        var dateOnly = Self.machine(mirrors: [Self.a, Self.b])
        _ = dateOnly.start(local: nil)
        _ = dateOnly.headReceived(Self.head(200, ["Content-Length": "1000", "Last-Modified": date]))
        let resumed = Self.head(206, ["Content-Range": "bytes 500-999/1000", "Last-Modified": date])
        _ = dateOnly.bodyFinished(.failed(.connection("reset")), flushed: 500)
        _ = dateOnly.headReceived(resumed)
        _ = dateOnly.bodyFinished(.failed(.connection("reset")), flushed: 500)
        _ = dateOnly.headReceived(resumed)
        #expect(dateOnly.bodyFinished(.failed(.connection("reset")), flushed: 500) == .send(Self.request(Self.b, mirror: 1)))

        var strong = Self.machine(mirrors: [Self.a, Self.b], retries: 0)
        _ = strong.start(local: nil)
        _ = strong.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(strong.bodyFinished(.failed(.connection("reset")), flushed: 500)
            == .send(Self.request(Self.b, mirror: 1, from: 500, ifRange: "\"v1\"")))
    }

    // MARK: - Bounded bodies

    static func bounded(size: Int64? = nil) -> DownloadStateMachine {
        DownloadStateMachine(configuration: .init(
            mirrors: [a], expectedSize: size, checksumPinned: false,
            retries: 2, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, pauseChunk: 400, boundedBodies: true))
    }

    @Test func largeOrUnknownBodiesComeInBoundedRangesEachValidated() {
        var machine = Self.bounded()
        #expect(machine.start(local: nil) == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 0, rangeEnd: 399)))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-399/1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 400)
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 400, rangeEnd: 799, ifRange: "\"v1\"")))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 400-799/1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 800)
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 800, rangeEnd: 999, ifRange: "\"v1\"")))
    }

    /// An attempt is one try against a mirror: the bounded ranges of one clean transfer are one
    /// attempt (URLSession reported 36 for a 300 MB file, issue 33), a failed range ends it and
    /// its retry is the next.
    @Test func boundedRangesOfOneTransferAreOneAttempt() {
        var machine = Self.bounded()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-399/1000", "ETag": "\"v1\""]))
        _ = machine.bodyFinished(.complete, flushed: 400)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 400-799/1000", "ETag": "\"v1\""]))
        _ = machine.bodyFinished(.complete, flushed: 800)
        #expect(machine.attempts.count == 1)
        #expect(machine.headReceived(Self.head(503)) == .sendAfter(
            PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 800, rangeEnd: 999, ifRange: "\"v1\""), RetryDelay(seconds: 1, jitter: true)))
        #expect(machine.attempts.count == 1)
        #expect(machine.attempts[0].httpStatus == 503 && machine.attempts[0].failure?.code == .httpStatus)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 800-999/1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        #expect(machine.attempts.count == 2)
        #expect(machine.attempts[1].httpStatus == 206 && machine.attempts[1].failure == nil)
    }

    /// A range asked again because the disk fell behind is not a new attempt either.
    @Test func aRangeAskedAgainAfterAnOverflowContinuesTheAttempt() {
        var machine = Self.bounded()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.overflow, flushed: 300)
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 300, rangeEnd: 699, ifRange: "\"v1\"")))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 300-699/1000", "ETag": "\"v1\""]))
        #expect(machine.attempts.count == 1 && machine.lastStatus == 206)
    }

    @Test func aBodyKnownToFitTheCapIsOnePlainRequest() {
        var machine = Self.bounded(size: 400)
        #expect(machine.start(local: nil) == .send(Self.request()))
    }

    @Test func aFirstRangeLongerThanTheFileEndsAtItsLastByte() {
        var machine = Self.bounded()
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/100", "Content-Length": "100"]))
            == .receive(BodyPlan(offset: 0, end: 100, sidecar: Sidecar(url: Self.a, urlSHA256: Digester.sha256Hex(Self.a),
                                                                      etag: nil, lastModified: nil, totalSize: 100))))
    }

    @Test func a206WhoseLengthContradictsItsRangeFailsTheMirror() {
        var machine = Self.bounded()
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/100", "Content-Length": "1100"]))
            .failureCode == .sizeMismatch)
    }

    // MARK: - Segments

    static func segmented(size: Int64? = nil) -> DownloadStateMachine {
        DownloadStateMachine(configuration: .init(
            mirrors: [a], expectedSize: size, checksumPinned: false,
            retries: 2, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, segments: 4, pieceSize: 100))
    }

    @Test func segmentedJobProbesWithTheFirstPieceThenSplitsTheRest() {
        var machine = Self.segmented()
        #expect(machine.start(local: nil) == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 0, rangeEnd: 99)))
        #expect(machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/1000", "ETag": "\"v1\""]))
            == .receive(BodyPlan(offset: 0, end: 100, sidecar: Self.sidecar())))
        guard case .segment(let start) = machine.bodyFinished(.complete, flushed: 100) else {
            Issue.record("no segments offered")
            return
        }
        #expect(start.total == 1000 && start.url.absoluteString == Self.a && start.done == ByteRanges([0..<100]))
        #expect(start.sidecar.etag == "\"v1\"" && start.sidecar.rangesDone == ByteRanges([0..<100]))
    }

    @Test func aServerIgnoringTheProbeRangeGivesOneStream() {
        var machine = Self.segmented()
        _ = machine.start(local: nil)
        #expect(machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
            == .receive(BodyPlan(offset: 0, end: 1000, sidecar: Self.sidecar())))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
    }

    @Test func noValidatorMeansNoSegmentsButTheRestInOneStream() {
        var machine = Self.segmented()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/1000"]))
        // Without a validator nothing proves the other ranges belong to the same file.
        #expect(machine.bodyFinished(.complete, flushed: 100) == .send(Self.request()))
    }

    @Test func segmentedPartialResumesEverySegmentAtOnce() {
        var machine = Self.segmented()
        var sidecar = Self.sidecar()
        sidecar.rangesDone = ByteRanges([0..<100, 300..<450])
        guard case .segment(let start) = machine.start(local: LocalPartial(fileSize: 1000, sidecar: sidecar)) else {
            Issue.record("segments not resumed")
            return
        }
        #expect(start.done == ByteRanges([0..<100, 300..<450]))
        // A resume only once the segments' responses proved the same content.
        #expect(machine.resumedFrom == nil)
        machine.segmentsFinished(attempts: [])
        #expect(machine.resumedFrom == 250)
    }

    /// A segmented resume that needed no request of the machine's own is one attempt with the
    /// segments' status (it reported `attempts: 0` and no `http_status`).
    @Test func aSegmentedResumeIsOneAttemptWithItsStatus() {
        var machine = Self.segmented()
        var sidecar = Self.sidecar()
        sidecar.rangesDone = ByteRanges([0..<400])
        _ = machine.start(local: LocalPartial(fileSize: 1000, sidecar: sidecar))
        machine.segmentsFinished(attempts: [])
        #expect(machine.attempts.count == 1 && machine.attempts[0].httpStatus == 206)
        #expect(machine.lastStatus == 206)
    }

    /// A resumed file that fails its checksum may hold a stale prefix the validators could not
    /// tell (same size, same mtime): it is fetched whole once more before the mirror is given up;
    /// a second failure does give it up.
    @Test func aResumedFileThatFailsItsChecksumIsFetchedWholeOnce() {
        var machine = Self.machine(mirrors: [Self.a, Self.b], pinned: true)
        _ = machine.start(local: LocalPartial(bytes: 400, sidecar: Self.sidecar()))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 400-999/1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        #expect(machine.resumedFrom == 400)
        let mismatch = BatchFetchError(.checksumMismatch, "bad")
        #expect(machine.verificationFailed(mismatch) == .send(Self.request()))
        #expect(machine.resumedFrom == nil)
        #expect(machine.attempts.last?.failure == mismatch)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        #expect(machine.attempts.count == 2)
        #expect(machine.verificationFailed(mismatch) == .send(Self.request(Self.b, mirror: 1)))
    }

    /// A complete partial answered by 416 is verified; when it fails, the file is fetched whole.
    @Test func aCompletePartialThatFailsItsChecksumIsFetchedWhole() {
        var machine = Self.machine(pinned: true)
        _ = machine.start(local: LocalPartial(bytes: 1000, sidecar: Self.sidecar()))
        #expect(machine.headReceived(Self.head(416, ["Content-Range": "bytes */1000"])) == .verifyPartial)
        #expect(machine.verificationFailed(BatchFetchError(.checksumMismatch, "bad")) == .send(Self.request()))
    }

    /// A file fetched whole from the start that fails is no stale partial: the mirror is given up.
    @Test func aWholeFileThatFailsItsChecksumFailsTheMirror() {
        var machine = Self.machine(pinned: true)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000"]))
        _ = machine.bodyFinished(.complete, flushed: 1000)
        #expect(machine.verificationFailed(BatchFetchError(.checksumMismatch, "bad")).failureCode == .checksumMismatch)
    }

    @Test func segmentsStoppedByChangedContentStartOverFromZero() {
        var machine = Self.segmented()
        var sidecar = Self.sidecar()
        sidecar.rangesDone = ByteRanges([0..<400])
        _ = machine.start(local: LocalPartial(fileSize: 1000, sidecar: sidecar))
        let changed = BatchFetchError(.remoteChanged, "Last-Modified changed")
        #expect(machine.segmentsEnded(writtenThrough: 400, failure: changed, attempts: [])
            == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 0, rangeEnd: 99)))
        #expect(machine.resumedFrom == nil)
    }

    @Test func segmentsEndingEarlyContinueAsOneStreamFromThePrefix() {
        var machine = Self.segmented()
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/1000", "ETag": "\"v1\""]))
        _ = machine.bodyFinished(.complete, flushed: 100)
        let failed = AttemptRecord(mirrorIndex: 0, url: Self.a, httpStatus: 200,
                                   failure: BatchFetchError(.rangeNotHonoured, "200"), waited: 0)
        #expect(machine.segmentsEnded(writtenThrough: 300, failure: failed.failure!, attempts: [failed])
            == .send(Self.request(from: 300, ifRange: "\"v1\"")))
        #expect(machine.attempts.count == 2 && machine.attempts.last == failed)
        // Segmenting is not offered a second time.
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 300-999/1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
    }

    /// Segments that reached their end through the first piece of two mirrors.
    static func twoMirrorSegments(size: Int64? = nil) -> DownloadStateMachine {
        var machine = DownloadStateMachine(configuration: .init(
            mirrors: [a, b], expectedSize: size, checksumPinned: true,
            retries: 2, backoff: 1, backoffMax: 8, allowInsecureRedirect: false, segments: 4, pieceSize: 100))
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/1000", "ETag": "\"v1\""]))
        _ = machine.bodyFinished(.complete, flushed: 100)
        return machine
    }

    /// Bytes of several mirrors that fail the checksum, with no piece hashes to name the bad
    /// ones: the file is fetched whole once more from the current mirror, one mirror at a time
    /// from then on; failing again, the job fails over as any mismatch does.
    @Test func aMixOfMirrorsThatFailsItsChecksumIsFetchedWholeFromOneMirror() {
        var machine = Self.twoMirrorSegments()
        machine.segmentsFinished(attempts: [], mixed: true)
        let mismatch = BatchFetchError(.checksumMismatch, "bad")
        #expect(machine.verificationFailed(mismatch) == .send(PlannedRequest(mirrorIndex: 0, url: Self.a, rangeStart: 0, rangeEnd: 99)))
        #expect(machine.oneMirrorOnly)
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/1000", "ETag": "\"v1\""]))
        guard case .segment = machine.bodyFinished(.complete, flushed: 100) else {
            Issue.record("the whole fetch from one mirror is not segmented")
            return
        }
        machine.segmentsFinished(attempts: [])
        // Failing again, the next mirror as after any mismatch (segments are offered once).
        #expect(machine.verificationFailed(mismatch) == .send(Self.request(Self.b, mirror: 1)))
        // Bytes of one mirror that fail are that mirror's fault: no second whole fetch.
        var single = Self.twoMirrorSegments()
        single.segmentsFinished(attempts: [])
        #expect(single.verificationFailed(mismatch).isSend(mirror: 1))
        #expect(!single.oneMirrorOnly)
    }

    /// Most mirrors serve another size than the first: its bytes are dropped and the next mirror
    /// starts over, segmented again. A piece bad twice gives the mirror up.
    @Test func segmentsEndedByASizeOrAPieceGiveTheMirrorUp() {
        var machine = Self.twoMirrorSegments()
        let outvoted = BatchFetchError(.sizeMismatch, "mirror 0 serves 1000 bytes where mirrors 1, 2 serve 900")
        #expect(machine.segmentsEnded(writtenThrough: 400, failure: outvoted, attempts: [])
            == .send(PlannedRequest(mirrorIndex: 1, url: Self.b, rangeStart: 0, rangeEnd: 99)))
        _ = machine.headReceived(Self.head(206, ["Content-Range": "bytes 0-99/900", "ETag": "\"v2\""]))
        guard case .segment(let start) = machine.bodyFinished(.complete, flushed: 100) else {
            Issue.record("no segments on the next mirror")
            return
        }
        #expect(start.total == 900 && start.done == ByteRanges([0..<100]))
        #expect(machine.attempts.contains { $0.mirrorIndex == 0 && $0.failure == outvoted })
        var bad = Self.twoMirrorSegments()
        let twice = BatchFetchError(.checksumMismatch, "piece 3 bad again")
        #expect(bad.segmentsEnded(writtenThrough: 300, failure: twice, attempts: [])
            == .send(PlannedRequest(mirrorIndex: 1, url: Self.b, rangeStart: 300, ifRange: "\"v1\"")))
    }

    /// A body that arrived whole with bad pieces: only they are fetched, over segments whose
    /// `done` is the rest, each named in the attempt log; once per job.
    @Test func badPiecesOfAWholeBodyAreFetchedAgainAlone() {
        var machine = Self.machine(mirrors: [Self.a, Self.b], pinned: true)
        _ = machine.start(local: nil)
        _ = machine.headReceived(Self.head(200, ["Content-Length": "1000", "ETag": "\"v1\""]))
        #expect(machine.bodyFinished(.complete, flushed: 1000) == .verify)
        let piece = AttemptRecord.Piece(index: 2, bytes: 512..<768)
        let done = ByteRanges([0..<512, 768..<1000])
        guard case .segment(let start) = machine.piecesBad([piece], done: done) else {
            Issue.record("no repair")
            return
        }
        #expect(start.done == done && start.repair == [2] && start.total == 1000 && start.sidecar.etag == "\"v1\"")
        #expect(machine.attempts.last?.failure?.code == .pieceMismatch && machine.attempts.last?.piece == piece)
        machine.segmentsFinished(attempts: [])
        #expect(machine.piecesBad([piece], done: done) == nil)
        // Without a validator nothing is repaired: the body fails as a whole.
        var bare = Self.machine(pinned: true)
        _ = bare.start(local: nil)
        _ = bare.headReceived(Self.head(200, ["Content-Length": "1000"]))
        _ = bare.bodyFinished(.complete, flushed: 1000)
        #expect(bare.piecesBad([piece], done: done) == nil)
    }
}

extension DownloadStateMachine.Action {
    func isSend(mirror: Int) -> Bool {
        if case .send(let request) = self { return request.mirrorIndex == mirror }
        return false
    }

    var failureCode: ErrorCode? {
        if case .fail(let failure) = self { return failure.code }
        return nil
    }
}

/// Heads answered without their body compare with the action they lead to.
extension DownloadStateMachine.AfterHead {
    static func send(_ request: PlannedRequest) -> Self { .next(.send(request)) }
    static func sendAfter(_ request: PlannedRequest, _ delay: RetryDelay) -> Self { .next(.sendAfter(request, delay)) }
    static func fail(_ failure: BatchFetchError) -> Self { .next(.fail(failure)) }
    static var verifyPartial: Self { .next(.verifyPartial) }
    static var notModified: Self { .next(.notModified) }

    var failureCode: ErrorCode? {
        if case .next(let action) = self { return action.failureCode }
        return nil
    }

    /// The failure, when the head ended the job.
    var failure: BatchFetchError? {
        if case .next(.fail(let failure)) = self { return failure }
        return nil
    }
}

extension DownloadStateMachine.Configuration {
    /// A configuration with policies made of the plain settings.
    init(mirrors: [String], expectedSize: Int64?, checksumPinned: Bool, retries: Int, backoff: Double,
         backoffMax: Double, allowInsecureRedirect: Bool, retryAfterMax: Double = 300,
         pauseChunk: Int64 = 8 << 20, pacedChunk: Int64? = nil, segments: Int = 1, pieceSize: Int64 = 16 << 20,
         boundedBodies: Bool = false) {
        self.init(
            mirrors: mirrors.map { MirrorURL(resolved: $0)! }, expectedSize: expectedSize, checksumPinned: checksumPinned,
            retry: RetryPolicy(retries: retries, backoff: backoff, backoffMax: backoffMax, retryAfterMax: retryAfterMax),
            redirect: RedirectPolicy(allowInsecure: allowInsecureRedirect),
            transfer: TransferPolicy(segments: segments, pieceSize: pieceSize, pauseChunk: pauseChunk, pacedChunk: pacedChunk,
                                     boundedBodies: boundedBodies))
    }
}

extension PlannedRequest {
    /// A request to a URL written as text.
    init(mirrorIndex: Int, url: String, rangeStart: Int64? = nil, rangeEnd: Int64? = nil, ifRange: String? = nil) {
        self.init(mirrorIndex: mirrorIndex, url: URL(string: url)!, rangeStart: rangeStart, rangeEnd: rangeEnd, ifRange: ifRange)
    }
}
