import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/2 call machine, legal and illegal, with times passed in by hand
/// (monotonic seconds from 1 000; head timeout 10 s).
final class H2CallStateTests: XCTestCase {
    typealias Phase = H2CallState.Phase
    let now = 1_000.0
    let failure = ProxyFailure.providerUnavailable("provider timed out")

    private enum Start { case receivingHead, routing, awaitingToken, forwarding, relaying, retrying, answeredLocally, closed }

    /// A call brought to `start` by legal events; `endStream` says whether the request head ended it.
    private func call(in start: Start, endStream: Bool = false, deadline: Double? = nil) -> H2CallState {
        var state = H2CallState(now: now, headTimeout: 10)
        state.setCallDeadline(deadline)
        guard start != .receivingHead else { return state }
        _ = state.handle(.headBlockEnded(endStream: endStream))
        switch start {
        case .receivingHead, .routing: break
        case .awaitingToken: _ = state.handle(.routed)
        case .forwarding: _ = state.handle(.routed); _ = state.handle(.tokenArrived)
        case .relaying: _ = state.handle(.routed); _ = state.handle(.tokenArrived); _ = state.handle(.upstreamHead(endStream: false, retryable: false))
        case .retrying: _ = state.handle(.routed); _ = state.handle(.tokenArrived); _ = state.handle(.upstreamHead(endStream: true, retryable: true))
        case .answeredLocally: _ = state.handle(.refused(.failure(failure)))
        case .closed: _ = state.handle(.streamClosed)
        }
        return state
    }

    // MARK: receivingHead

    func testHeadEndMovesToRoutingAndArmsTheHeadTimer() {
        var state = call(in: .receivingHead)
        XCTAssertEqual(state.handle(.headBlockEnded(endStream: false)), [.armTimer(at: now + 10), .route])
        XCTAssertEqual(state.phase, .routing)
        XCTAssertFalse(state.requestEnded)
    }

    func testGRPCTimeoutShorterThanTheHeadTimeoutIsTheTimer() {
        var state = call(in: .receivingHead, deadline: now + 2)
        XCTAssertEqual(state.handle(.headBlockEnded(endStream: true)), [.armTimer(at: now + 2), .route])
        XCTAssertTrue(state.requestEnded)
    }

    func testDataBeforeTheHeadEndsIsDiscarded() {
        var state = call(in: .receivingHead)
        XCTAssertEqual(state.handle(.data), [.discard])
        XCTAssertEqual(state.phase, .receivingHead)
    }

    func testNothingButTheHeadMovesAReceivingCall() {
        for event: H2CallState.Event in [.routed, .tokenArrived, .upstreamEnded, .answerSent, .dataEnded,
                                         .upstreamHead(endStream: true, retryable: false), .tokenFailed(failure)] {
            var state = call(in: .receivingHead)
            _ = state.handle(event)
            XCTAssertEqual(state.phase, .receivingHead, "\(event)")
        }
    }

    // MARK: routing

    func testDataWhileRoutingIsBufferedAndRouted() {
        var state = call(in: .routing)
        XCTAssertEqual(state.handle(.data), [.buffer, .route])
        XCTAssertEqual(state.handle(.dataEnded), [.route])
        XCTAssertTrue(state.requestEnded)
    }

    func testTrailersWhileRoutingEndTheRequestAndDoNotRearmTheTimer() {
        var state = call(in: .routing, deadline: now + 5)
        let actions = state.handle(.headBlockEnded(endStream: true))
        XCTAssertEqual(actions, [.route])
        XCTAssertFalse(actions.contains { if case .armTimer = $0 { return true } else { return false } })
        XCTAssertTrue(state.requestEnded)
        XCTAssertEqual(state.headerBlocks, 2)
    }

    func testRoutedFetchesTheTokenUnderTheCallDeadline() {
        var state = call(in: .routing, deadline: now + 5)
        XCTAssertEqual(state.handle(.routed), [.armTimer(at: now + 5), .fetchToken])
        XCTAssertEqual(state.phase, .awaitingToken)
    }

    func testRoutedWithoutDeadlineCancelsTheHeadTimer() {
        var state = call(in: .routing)
        XCTAssertEqual(state.handle(.routed), [.cancelTimer, .fetchToken])
    }

    func testRefusedWhileRoutingAnswersLocally() {
        var state = call(in: .routing)
        XCTAssertEqual(state.handle(.refused(.failure(failure))), [.cancelTimer, .releaseBuffers, .answer(.failure(failure))])
        XCTAssertEqual(state.phase, .answeredLocally)
        XCTAssertTrue(state.responseEnded)
        XCTAssertTrue(state.isFinished)
    }

    func testHeadTimeoutWhileRouting() {
        var state = call(in: .routing)
        XCTAssertEqual(state.handle(.tick(now: now + 9.9)), [.armTimer(at: now + 10)])
        XCTAssertEqual(state.handle(.tick(now: now + 10)), [.cancelTimer, .releaseBuffers, .answer(.headTimeout)])
        XCTAssertEqual(state.phase, .answeredLocally)
    }

    func testCallDeadlineWhileRoutingWinsOverTheHeadTimeout() {
        var state = call(in: .routing, deadline: now + 1)
        XCTAssertEqual(state.handle(.tick(now: now + 1)), [.cancelTimer, .releaseBuffers, .answer(.deadline)])
    }

    func testTokenEventsWhileRoutingAreIllegal() {
        var state = call(in: .routing)
        XCTAssertEqual(state.handle(.tokenArrived), [])
        XCTAssertEqual(state.handle(.tokenFailed(failure)), [])
        XCTAssertEqual(state.handle(.upstreamHead(endStream: true, retryable: false)), [])
        XCTAssertEqual(state.phase, .routing)
    }

    // MARK: awaitingToken

    func testTokenArrivedStartsTheUpstream() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.handle(.tokenArrived), [.cancelTimer, .startUpstream])
        XCTAssertEqual(state.phase, .forwarding)
        XCTAssertEqual(state.attempts, 1)
    }

    func testTokenFailedAnswersLocally() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.handle(.tokenFailed(failure)), [.cancelTimer, .releaseBuffers, .answer(.failure(failure))])
    }

    func testDataWhileAwaitingTheTokenIsBufferedOnly() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.handle(.data), [.buffer])
        XCTAssertEqual(state.handle(.dataEnded), [])
        XCTAssertTrue(state.requestEnded)
    }

    func testDeadlineWhileAwaitingTheToken() {
        var state = call(in: .awaitingToken, deadline: now + 1)
        XCTAssertEqual(state.handle(.tick(now: now + 0.5)), [.armTimer(at: now + 1)])
        XCTAssertEqual(state.handle(.tick(now: now + 1)), [.cancelTimer, .releaseBuffers, .answer(.deadline)])
        XCTAssertEqual(state.handle(.tokenArrived), [], "a token after the deadline is not used")
    }

    func testHeadTimeoutDoesNotApplyOnceRouted() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.handle(.tick(now: now + 60)), [])
        XCTAssertEqual(state.phase, .awaitingToken)
    }

    func testResetWhileAwaitingTheTokenClosesWithoutUpstream() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.handle(.streamClosed), [.cancelTimer, .releaseBuffers, .finish])
        XCTAssertEqual(state.handle(.tokenArrived), [])
        XCTAssertEqual(state.phase, .closed)
    }

    // MARK: forwarding

    func testUpstreamHeadIsRelayed() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.upstreamHead(endStream: false, retryable: false)), [.relayHead(endStream: false)])
        XCTAssertEqual(state.phase, .relaying)
        XCTAssertFalse(state.responseEnded)
    }

    func testTrailersOnlyUpstreamHeadEndsTheResponse() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.upstreamHead(endStream: true, retryable: false)), [.relayHead(endStream: true)])
        XCTAssertTrue(state.responseEnded)
    }

    func testUnauthenticatedOnTheFirstAttemptRetriesWithAFreshToken() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.upstreamHead(endStream: true, retryable: true)), [.retryWithFreshToken, .fetchToken])
        XCTAssertEqual(state.phase, .retrying)
        XCTAssertEqual(state.handle(.tokenArrived), [.cancelTimer, .startUpstream])
        XCTAssertEqual(state.attempts, 2)
        XCTAssertEqual(state.handle(.upstreamHead(endStream: true, retryable: true)), [.relayHead(endStream: true)],
                       "the second UNAUTHENTICATED goes to the client")
    }

    func testDataWhileForwardingIsBufferedAndResumesAStalledUpstreamBodyOnce() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.data), [.buffer], "the body provider is not waiting")
        XCTAssertEqual(state.handle(.upstreamBodyStalled), [])
        XCTAssertTrue(state.upstreamBodyStalled)
        XCTAssertEqual(state.handle(.data), [.buffer, .resumeUpstreamBody])
        XCTAssertFalse(state.upstreamBodyStalled)
        XCTAssertEqual(state.handle(.data), [.buffer])
        _ = state.handle(.upstreamBodyStalled)
        XCTAssertEqual(state.handle(.dataEnded), [.resumeUpstreamBody])
    }

    func testClientTrailersWhileForwardingEndTheBodyAndAreNotForwarded() {
        var state = call(in: .forwarding)
        _ = state.handle(.upstreamBodyStalled)
        XCTAssertEqual(state.handle(.headBlockEnded(endStream: true)), [.resumeUpstreamBody])
        XCTAssertTrue(state.requestEnded)
    }

    func testUpstreamBodyStalledIsOnlyHeardWhileForwardingOrRelaying() {
        for start: Start in [.routing, .awaitingToken, .retrying, .answeredLocally, .closed] {
            var state = call(in: start)
            XCTAssertEqual(state.handle(.upstreamBodyStalled), [])
            XCTAssertFalse(state.upstreamBodyStalled, "\(start)")
        }
    }

    func testARetryStartsWithTheUpstreamBodyNotStalled() {
        var state = call(in: .forwarding)
        _ = state.handle(.upstreamBodyStalled)
        _ = state.handle(.upstreamHead(endStream: true, retryable: true))
        _ = state.handle(.tokenArrived)
        XCTAssertFalse(state.upstreamBodyStalled)
    }

    func testUpstreamFailureBeforeTheHeadAnswersLocally() {
        let broken = ProxyFailure.upstreamUnavailable("reset")
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.upstreamFailed(broken)), [.cancelTimer, .cancelUpstream, .releaseBuffers, .answer(.failure(broken))])
    }

    func testDeadlineDoesNotApplyOnceForwarded() {
        var state = call(in: .forwarding, deadline: now + 1)
        XCTAssertEqual(state.handle(.tick(now: now + 5)), [])
        XCTAssertEqual(state.phase, .forwarding)
    }

    func testResetWhileForwardingCancelsTheUpstream() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.streamClosed), [.cancelTimer, .cancelUpstream, .releaseBuffers, .finish])
    }

    // MARK: relaying

    func testUpstreamEndResumesAStalledClientBodyOnce() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.handle(.clientBodyStalled), [])
        XCTAssertEqual(state.handle(.upstreamEnded), [.resumeClientBody])
        XCTAssertTrue(state.responseEnded)
        XCTAssertEqual(state.handle(.upstreamEnded), [])
    }

    func testResponseBytesResumeAStalledClientBodyOnly() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.handle(.responseBytes(now: now)), [.armTimer(at: now + 30)], "the body provider is not waiting")
        _ = state.handle(.responseTaken(now: now, drained: true))
        _ = state.handle(.clientBodyStalled)
        XCTAssertTrue(state.clientBodyStalled)
        XCTAssertEqual(state.handle(.responseBytes(now: now + 1)), [.resumeClientBody, .armTimer(at: now + 31)])
        XCTAssertFalse(state.clientBodyStalled)
        XCTAssertEqual(state.handle(.responseBytes(now: now + 2)), [], "already waiting since +1")
    }

    func testResponseBytesBeforeRelayingAreIllegal() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.handle(.clientBodyStalled), [])
        XCTAssertEqual(state.handle(.responseBytes(now: now)), [])
        XCTAssertFalse(state.clientBodyStalled)
        XCTAssertNil(state.responseWaitingSince)
    }

    func testAClientThatTakesNothingForTheIOTimeoutIsResetAndTheUpstreamCancelled() {
        var state = call(in: .relaying)
        _ = state.handle(.responseBytes(now: now))
        XCTAssertEqual(state.handle(.tick(now: now + 29)), [.armTimer(at: now + 30)])
        XCTAssertEqual(state.handle(.tick(now: now + 30)), [.resetClient(errorCode: H2CallState.cancel), .cancelUpstream])
        XCTAssertEqual(state.phase, .closed)
        XCTAssertEqual(state.handle(.streamClosed), [.cancelTimer, .releaseBuffers, .finish])
    }

    func testAClientTakingBytesMovesTheIOTimeout() {
        var state = call(in: .relaying)
        _ = state.handle(.responseBytes(now: now))
        XCTAssertEqual(state.handle(.responseTaken(now: now + 20, drained: false)), [])
        XCTAssertEqual(state.handle(.tick(now: now + 30)), [.armTimer(at: now + 50)])
        XCTAssertEqual(state.phase, .relaying)
    }

    func testAClientThatTookEverythingIsNotTimedOut() {
        var state = call(in: .relaying)
        _ = state.handle(.responseBytes(now: now))
        _ = state.handle(.responseTaken(now: now + 1, drained: true))
        XCTAssertNil(state.responseWaitingSince)
        XCTAssertEqual(state.handle(.tick(now: now + 300)), [])
        XCTAssertEqual(state.phase, .relaying)
    }

    func testResponseTakenOutsideRelayingIsIgnored() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.handle(.responseTaken(now: now, drained: false)), [])
        XCTAssertNil(state.responseWaitingSince)
    }

    func testUpstreamFailureAfterTheHeadResetsTheClient() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.handle(.upstreamFailed(failure)), [.resetClient(errorCode: H2CallState.internalError)])
        XCTAssertEqual(state.phase, .closed)
    }

    func testNoLocalAnswerOnceRelaying() {
        var state = call(in: .relaying, deadline: now + 1)
        XCTAssertEqual(state.handle(.refused(.failure(failure))), [])
        XCTAssertEqual(state.handle(.tick(now: now + 2)), [])
        XCTAssertEqual(state.handle(.upstreamHead(endStream: false, retryable: false)), [])
        XCTAssertEqual(state.phase, .relaying)
    }

    func testAnswerSentWhileRelayingDoesNotReset() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.handle(.answerSent), [])
    }

    // MARK: retrying

    func testResetWhileRetryingCancelsTheUpstream() {
        var state = call(in: .retrying)
        XCTAssertEqual(state.handle(.streamClosed), [.cancelTimer, .cancelUpstream, .releaseBuffers, .finish])
    }

    func testTokenFailureWhileRetryingAnswersLocally() {
        var state = call(in: .retrying)
        XCTAssertEqual(state.handle(.tokenFailed(failure)), [.cancelTimer, .cancelUpstream, .releaseBuffers, .answer(.failure(failure))])
    }

    // MARK: answeredLocally

    func testDataAfterALocalAnswerIsDiscarded() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.handle(.data), [.discard])
        XCTAssertEqual(state.phase, .answeredLocally)
    }

    func testAnswerSentWithTheRequestOpenResetsTheStreamWithNoError() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.handle(.answerSent), [.resetClient(errorCode: H2CallState.noError)])
    }

    func testAnswerSentAfterTheRequestEndedDoesNotReset() {
        var state = call(in: .answeredLocally, endStream: true)
        XCTAssertEqual(state.handle(.answerSent), [])
    }

    func testASecondAnswerIsIllegal() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.handle(.refused(.failure(failure))), [])
        XCTAssertEqual(state.handle(.tick(now: now + 100)), [])
        XCTAssertEqual(state.handle(.tokenArrived), [])
        XCTAssertEqual(state.handle(.routed), [])
    }

    func testStreamCloseAfterALocalAnswerFinishesOnce() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.handle(.streamClosed), [.cancelTimer, .releaseBuffers, .finish])
        XCTAssertEqual(state.handle(.streamClosed), [])
    }

    // MARK: closed

    func testNothingMovesAClosedCall() {
        for event: H2CallState.Event in [.routed, .tokenArrived, .upstreamEnded, .answerSent, .dataEnded, .streamClosed,
                                         .headBlockEnded(endStream: true), .tick(now: 5_000), .refused(.headTimeout),
                                         .upstreamHead(endStream: true, retryable: false), .upstreamFailed(failure)] {
            var state = call(in: .closed)
            XCTAssertEqual(state.handle(event), [], "\(event)")
            XCTAssertEqual(state.phase, .closed)
        }
        var state = call(in: .closed)
        XCTAssertEqual(state.handle(.data), [.discard])
    }

    func testCallDeadlineIsFixedOnceTheHeadIsRead() {
        var state = call(in: .routing)
        state.setCallDeadline(now + 1)
        XCTAssertNil(state.callDeadline)
    }
}
