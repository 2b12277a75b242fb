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

    @Test func equallyCloseCandidatesGiveTheSameAnswerInAnyOrder() {
        #expect(Suggestion.closest(to: "c", in: ["b", "a"]) == "a")
        #expect(Suggestion.closest(to: "c", in: ["a", "b"]) == "a")
        #expect(Suggestion.closest(to: "c", in: ["b", "a", "c"]) == "c")
    }

    @Test func lengthsTooFarApartAreNotCompared() {
        #expect(Suggestion.closest(to: "url", in: ["urls", "u", "a-much-longer-key"]) == "urls")
        #expect(Suggestion.closest(to: "RETRIES", in: ["retries"]) == "retries")
    }

    /// A manifest with many unknown dependencies gets "did you mean" for the first ones only:
    /// each costs an edit distance per job id, and without a bound a large hostile manifest took
    /// minutes to validate.
    @Test func dependencySuggestionsStopAtTheBudget() throws {
        var text = "version: 1\njobs:\n"
        for number in 0..<10 { text += "  - {id: alpha\(number), url: 'https://h.example/\(number)'}\n" }
        var manifest = try ManifestLoader(environment: [:]).load(bytes: Array(text.utf8), displayPath: "m.yaml", baseDirectory: "/srv")
        manifest.jobs[7].dependsOn = ["alpha1x"]
        manifest.jobs[7].source.dependsOn = [SourceLocation(line: 10, column: 1)]
        manifest.jobs[8].dependsOn = ["alpha2x"]
        manifest.jobs[8].source.dependsOn = [SourceLocation(line: 11, column: 1)]
        var validator = ManifestValidator(suggestionBudget: 15)  // ten ids per unknown dependency
        validator.validate(manifest)
        #expect(validator.problems.problems.map(\.message) == [
            "job 'alpha7': depends on unknown job 'alpha1x' (did you mean 'alpha1'?)",
            "job 'alpha8': depends on unknown job 'alpha2x'",
        ])
    }
}
