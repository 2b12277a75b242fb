@testable import BatchFetchEngine
@testable import BatchFetchNetwork
import Testing

/// The per-request rules: what the transport's end of a request means, given what we asked of
/// it (a shed for the disk, a stop at the body's end, a head answered without its body).
@Suite struct AttemptStateTests {
    static func receiving() -> AttemptState {
        var state = AttemptState()
        state.head(accepted: true)
        return state
    }

    @Test func aCleanEndIsComplete() {
        var state = Self.receiving()
        let accepted = state.body(100)
        #expect(accepted && state.received == 100)
        #expect(state.end(nil, expired: false, tooLong: false, writeFailed: false) == (nil, false))
    }

    @Test func bytesOfADeclinedHeadAreCountedButNotAccepted() {
        var state = AttemptState()
        state.head(accepted: false)
        let accepted = state.body(10)
        #expect(!accepted && state.received == 10)
        // Cancelling a body we did not want is no failure.
        #expect(state.end(.cancelled, expired: false, tooLong: false, writeFailed: false) == (nil, false))
    }

    @Test func aCancelBeforeAnyHeadIsAnInterruption() {
        let state = AttemptState()
        #expect(state.end(.cancelled, expired: false, tooLong: false, writeFailed: false) == (.cancelled, false))
        #expect(state.end(.connection("refused"), expired: false, tooLong: false, writeFailed: false) == (.connection("refused"), false))
    }

    @Test func theWatchdogsCancelIsATimeout() {
        let state = Self.receiving()
        #expect(state.end(.cancelled, expired: true, tooLong: false, writeFailed: false) == (.timedOut, false))
    }

    @Test func aShedIsAskedOnceAndItsCancelIsAnOverflow() {
        var state = Self.receiving()
        let first = state.shed(), second = state.shed()
        #expect(first && !second)
        #expect(state.end(.cancelled, expired: false, tooLong: false, writeFailed: false) == (nil, true))
    }

    @Test func aBodyThatEndedBeforeTheShedTookEffectIsComplete() {
        var state = Self.receiving()
        _ = state.shed()
        #expect(state.end(nil, expired: false, tooLong: false, writeFailed: false) == (nil, false))
    }

    @Test func aFullSinkStopsAcceptingAndIsAnOverflow() {
        var state = Self.receiving()
        state.stop(sinkFull: true)
        let accepted = state.body(1)
        #expect(!accepted)
        #expect(state.end(.cancelled, expired: false, tooLong: false, writeFailed: false) == (nil, true))
    }

    @Test func theCancelAfterATooLongBodyOrAFailedWriteIsNoTransportFailure() {
        var state = Self.receiving()
        state.stop(sinkFull: false)
        #expect(state.end(.cancelled, expired: false, tooLong: true, writeFailed: false) == (nil, false))
        #expect(state.end(.cancelled, expired: false, tooLong: false, writeFailed: true) == (nil, false))
    }

    @Test func aTransferTheTransportShedIsAnOverflowOnlyWhileTakingTheBody() {
        #expect(Self.receiving().end(.overloaded, expired: false, tooLong: false, writeFailed: false) == (nil, true))
        var declined = AttemptState()
        declined.head(accepted: false)
        #expect(declined.end(.overloaded, expired: false, tooLong: false, writeFailed: false)
            == (.connection("transfer shed by the transport"), false))
    }
}
