@testable import BatchFetchSpec
import Testing

@Suite struct SuggestionTests {
    @Test func editDistanceCountsTranspositionsOnce() {
        #expect(Suggestion.editDistance("checksum", "checksumm") == 1)
        #expect(Suggestion.editDistance("depnds_on", "depends_on") == 1)
        #expect(Suggestion.editDistance("ulr", "url") == 1)
        #expect(Suggestion.editDistance("abc", "xyz") == 3)
    }

    @Test func onlyCloseCandidatesAreSuggested() {
        #expect(Suggestion.closest(to: "concurency", in: ["concurrency", "per_host"]) == "concurrency")
        #expect(Suggestion.closest(to: "colour", in: ["concurrency", "per_host"]) == nil)
    }
}
