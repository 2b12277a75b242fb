@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// The rate-limit headers servers send before they must answer 429, in every form read.
@Suite struct RateLimitHintTests {
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func hint(_ headers: [String: String]) -> RateLimitHint? {
        RateLimitHint(TransportResponseHead(status: 200, headers: headers), now: Self.now)
    }

    @Test func theCurrentDraftFormTakesTheTightestPolicy() {
        #expect(hint(["ratelimit": "\"default\";r=50;t=30"]) == RateLimitHint(remaining: 50, reset: 30))
        #expect(hint(["ratelimit": "\"hour\";r=900;t=3000, \"burst\";r=2;t=1"]) == RateLimitHint(remaining: 2, reset: 1))
        // No t: the policy's window.
        #expect(hint(["ratelimit": "\"p\";r=3", "ratelimit-policy": "\"p\";q=10;w=60"]) == RateLimitHint(remaining: 3, reset: 60))
        #expect(hint(["ratelimit": "\"p\";r=3"]) == nil)
    }

    @Test func theDraft07FormIsADictionary() {
        #expect(hint(["ratelimit": "limit=100, remaining=0, reset=7"]) == RateLimitHint(remaining: 0, reset: 7))
        #expect(hint(["ratelimit": "limit=100, remaining=4", "ratelimit-policy": "100;w=10"]) == RateLimitHint(remaining: 4, reset: 10))
        #expect(hint(["ratelimit-remaining": "9", "ratelimit-reset": "2"]) == RateLimitHint(remaining: 9, reset: 2))
    }

    @Test func xRateLimitResetIsAnEpochAboveOneBillionAndADelayBelow() {
        #expect(hint(["x-ratelimit-remaining": "0", "x-ratelimit-reset": "1800000042"]) == RateLimitHint(remaining: 0, reset: 42))
        #expect(hint(["x-ratelimit-remaining": "5", "x-ratelimit-reset": "12"]) == RateLimitHint(remaining: 5, reset: 12))
        #expect(hint(["x-ratelimit-remaining": "5", "x-ratelimit-reset": "1799999000"]) == RateLimitHint(remaining: 5, reset: 0))
    }

    @Test func malformedOrPartialHeadersGiveNoHint() {
        for headers in [["ratelimit": "r=5;t=x"], ["ratelimit": "\"p\";r=-1;t=5"], ["x-ratelimit-remaining": "many", "x-ratelimit-reset": "5"],
                        ["x-ratelimit-remaining": "5"], ["ratelimit-policy": "10;w=1"], [:]] {
            #expect(hint(headers) == nil, "\(headers)")
        }
    }
}
