import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/2 call machine, legal and illegal, with times passed in by hand
/// (monotonic seconds from 1 000; head timeout 10 s, ioTimeout 30 s).
final class H2CallStateTests: XCTestCase {
    typealias Answer = H2CallState.Answer
    let now = 1_000.0
    let failure = ProxyFailure.providerUnavailable("provider timed out")
    let broken = ProxyFailure.upstreamUnavailable("reset")

    private enum Start { case receivingHead, routing, awaitingToken, forwarding, relaying, retrying, answeredLocally, reset, closed }

    /// A call brought to `start` by legal events; `endStream` says whether the request head ended it.
    private func call(in start: Start, endStream: Bool = false, deadline: Double? = nil, idempotent: Bool = false) -> H2CallState {
        var state = H2CallState(now: now, headTimeout: 10)
        guard start != .receivingHead else { return state }
        _ = state.requestHeadEnded(endStream: endStream, callDeadline: deadline, idempotent: idempotent)
        switch start {
        case .receivingHead, .routing: break
        case .awaitingToken: _ = state.routed()
        case .forwarding: _ = state.routed(); _ = state.tokenArrived()
        case .relaying, .reset:
            _ = state.routed(); _ = state.tokenArrived()
            _ = state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: false)
            if start == .reset { _ = state.upstreamClosed(.failed(broken)) }
        case .retrying:
            _ = state.routed(); _ = state.tokenArrived()
            _ = state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true)
        case .answeredLocally: _ = state.refused(.failure(failure))
        case .closed: _ = state.streamClosed()
        }
        return state
    }

    private func answer(_ why: H2CallState.LocalAnswer, cancelUpstream: Bool = false) -> Answer {
        Answer(why: why, cancelUpstream: cancelUpstream)
    }

    private func isRelaying(_ state: H2CallState) -> Bool {
        if case .relaying = state.state { return true } else { return false }
    }

    private func isForwarding(_ state: H2CallState) -> Bool {
        if case .forwarding = state.state { return true } else { return false }
    }

    // MARK: receivingHead

    func testHeadEndMovesToRoutingAndArmsTheHeadTimer() {
        var state = call(in: .receivingHead)
        XCTAssertTrue(state.awaitsRequestHead)
        XCTAssertEqual(state.requestHeadEnded(endStream: false, callDeadline: nil), now + 10)
        XCTAssertEqual(state.state, .routing(callDeadline: nil, requestEnded: false))
        XCTAssertFalse(state.awaitsRequestHead)
        XCTAssertFalse(state.requestEnded)
    }

    func testGRPCTimeoutShorterThanTheHeadTimeoutIsTheTimer() {
        var state = call(in: .receivingHead)
        XCTAssertEqual(state.requestHeadEnded(endStream: true, callDeadline: now + 2), now + 2)
        XCTAssertTrue(state.requestEnded)
    }

    func testDataBeforeTheHeadEndsIsDiscarded() {
        var state = call(in: .receivingHead)
        XCTAssertEqual(state.requestData(), .discard)
        XCTAssertEqual(state.state, .receivingHead)
    }

    func testNothingButTheHeadMovesAReceivingCall() {
        var state = call(in: .receivingHead)
        XCTAssertNil(state.routed())
        XCTAssertNil(state.tokenArrived())
        XCTAssertNil(state.tokenFailed(failure))
        XCTAssertNil(state.upstreamDataEnded())
        XCTAssertNil(state.answerSent())
        XCTAssertNil(state.requestEndReceived())
        XCTAssertNil(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: false))
        XCTAssertNil(state.tick(now: now + 100))
        XCTAssertEqual(state.state, .receivingHead)
    }

    // MARK: routing

    func testDataWhileRoutingIsBufferedAsTheFirstMessageAndRouted() {
        var state = call(in: .routing)
        XCTAssertEqual(state.requestData(), .bufferFirstMessage)
        XCTAssertTrue(state.isRouting)
        XCTAssertEqual(state.requestEndReceived(), .route)
        XCTAssertTrue(state.requestEnded)
    }

    func testASecondHeadIsNotReadAndTheDeadlineIsFixedOnceTheHeadIsRead() {
        var state = call(in: .routing, deadline: now + 5)
        XCTAssertFalse(state.awaitsRequestHead, "a later block is the client's trailers")
        XCTAssertNil(state.requestHeadEnded(endStream: true, callDeadline: now + 1))
        XCTAssertEqual(state.state, .routing(callDeadline: now + 5, requestEnded: false))
    }

    func testRoutedFetchesTheTokenUnderTheCallDeadline() {
        var state = call(in: .routing, deadline: now + 5)
        XCTAssertEqual(state.routed(), .fetchToken(armTimerAt: now + 5))
        XCTAssertEqual(state.state, .awaitingToken(callDeadline: now + 5, sends: .init(), requestEnded: false))
    }

    func testRoutedWithoutDeadlineCancelsTheHeadTimer() {
        var state = call(in: .routing)
        XCTAssertEqual(state.routed(), .fetchToken(armTimerAt: nil))
        XCTAssertNil(state.routed(), "routed once")
    }

    func testRefusedWhileRoutingAnswersLocally() {
        var state = call(in: .routing)
        XCTAssertEqual(state.refused(.failure(failure)), answer(.failure(failure)))
        XCTAssertEqual(state.state, .answeredLocally(clientBodyWaits: false, requestEnded: false))
    }

    func testHeadTimeoutWhileRouting() {
        var state = call(in: .routing)
        XCTAssertEqual(state.tick(now: now + 9.9), .armTimer(at: now + 10))
        XCTAssertEqual(state.tick(now: now + 10), .answer(answer(.headTimeout)))
        XCTAssertEqual(state.state, .answeredLocally(clientBodyWaits: false, requestEnded: false))
    }

    func testCallDeadlineWhileRoutingWinsOverTheHeadTimeout() {
        var state = call(in: .routing, deadline: now + 1)
        XCTAssertEqual(state.tick(now: now + 0.5), .armTimer(at: now + 1))
        XCTAssertEqual(state.tick(now: now + 1), .answer(answer(.deadline)))
    }

    func testTokenAndUpstreamEventsWhileRoutingAreIllegal() {
        var state = call(in: .routing)
        XCTAssertNil(state.tokenArrived())
        XCTAssertNil(state.tokenFailed(failure))
        XCTAssertNil(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: false))
        XCTAssertNil(state.upstreamClosed(.failed(broken)))
        XCTAssertEqual(state.state, .routing(callDeadline: nil, requestEnded: false))
    }

    // MARK: awaitingToken

    func testTokenArrivedStartsTheUpstream() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.tokenArrived(), .startUpstream)
        XCTAssertEqual(state.state, .forwarding(.init(sends: .init(attempt: 1, starts: 1), requestEnded: false, copied: 0)))
    }

    func testTokenFailedAnswersLocally() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.tokenFailed(failure), answer(.failure(failure)))
        XCTAssertEqual(state.state, .answeredLocally(clientBodyWaits: false, requestEnded: false))
    }

    func testDataWhileAwaitingTheTokenIsBufferedOnly() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.requestData(), .buffer)
        XCTAssertNil(state.requestEndReceived())
        XCTAssertTrue(state.requestEnded)
    }

    func testDeadlineWhileAwaitingTheToken() {
        var state = call(in: .awaitingToken, deadline: now + 1)
        XCTAssertEqual(state.tick(now: now + 0.5), .armTimer(at: now + 1))
        XCTAssertEqual(state.tick(now: now + 1), .answer(answer(.deadline)))
        XCTAssertNil(state.tokenArrived(), "a token after the deadline is not used")
    }

    func testHeadTimeoutDoesNotApplyOnceRouted() {
        var state = call(in: .awaitingToken)
        XCTAssertNil(state.tick(now: now + 60))
        XCTAssertEqual(state.state, .awaitingToken(callDeadline: nil, sends: .init(), requestEnded: false))
    }

    func testResetWhileAwaitingTheTokenClosesWithoutUpstream() {
        var state = call(in: .awaitingToken)
        XCTAssertEqual(state.streamClosed(), .finish(cancelUpstream: false))
        XCTAssertNil(state.tokenArrived())
        XCTAssertEqual(state.state, .closed)
    }

    // MARK: forwarding: the answer's header blocks

    func testUpstreamHeadIsRelayed() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: false), .relayHead(endStream: false))
        XCTAssertEqual(state.state, .relaying(.init(requestEnded: false, responseEnded: false, upstreamBodyWaits: false)))
    }

    func testTrailersOnlyUpstreamHeadEndsTheResponse() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: false), .relayHead(endStream: true))
        XCTAssertEqual(state.state, .relaying(.init(requestEnded: false, responseEnded: true, upstreamBodyWaits: false)))
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .end)
    }

    func testAnInterimHeadIsSkippedAndTheNextIsTheAnswer() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: false, informational: true, unauthenticated: false), .skipInterim)
        XCTAssertTrue(isForwarding(state))
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: false), .relayHead(endStream: false))
    }

    func testTheBlockAfterTheHeadIsTheTrailersAndEndsTheAnswer() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .wait)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true), .keepTrailers(resumeClientBody: true),
                       "an UNAUTHENTICATED in the trailers is the answer's, never retried")
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .end)
        XCTAssertNil(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: false), "one set of trailers")
        XCTAssertNil(state.upstreamDataEnded())
    }

    // MARK: forwarding: the one retry with a fresh token

    func testUnauthenticatedOnTheFirstAttemptRetriesWithAFreshTokenOnce() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.requestBodyRead(count: 100, remaining: 0), .send(keepCopy: true))
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true), .retryWithFreshToken)
        XCTAssertEqual(state.state, .awaitingToken(callDeadline: nil, sends: .init(attempt: 1, starts: 1), requestEnded: false))
        XCTAssertEqual(state.tokenArrived(), .startUpstream)
        XCTAssertEqual(state.state, .forwarding(.init(sends: .init(attempt: 2, starts: 2), requestEnded: false, copied: 0)))
        XCTAssertEqual(state.requestBodyRead(count: 100, remaining: 0), .send(keepCopy: true), "kept for a resend (not for a third token)")
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true), .relayHead(endStream: true),
                       "the second UNAUTHENTICATED goes to the client")
    }

    /// Fleet Engine's REST 401 carries a JSON body: it is retried like a bodiless one (the body
    /// goes with the cancelled upstream exchange), as HTTP/1.1 clients' calls are
    /// (docs/CONTRACT.md §5); the second 401, body and all, is the answer.
    func testAnUnauthorizedHeadWithABodyIsRetriedOnceToo() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: true), .retryWithFreshToken)
        XCTAssertEqual(state.tokenArrived(), .startUpstream)
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: true), .relayHead(endStream: false),
                       "the second 401 goes to the client")
    }

    func testNoRetryOnceMoreThanTheReplayLimitWasSent() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.requestBodyRead(count: ReplayPolicy.bodyBound - 1, remaining: 10), .send(keepCopy: true))
        XCTAssertEqual(state.requestBodyRead(count: 1, remaining: 10), .send(keepCopy: true), "exactly the limit is kept")
        XCTAssertEqual(state.requestBodyRead(count: 1, remaining: 9), .send(keepCopy: false))
        XCTAssertEqual(state.requestBodyRead(count: 1, remaining: 8), .send(keepCopy: false), "a gap is never kept")
        XCTAssertEqual(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true), .relayHead(endStream: true))
    }

    func testTokenFailureWhileRetryingAnswersLocally() {
        var state = call(in: .retrying)
        XCTAssertEqual(state.tokenFailed(failure), answer(.failure(failure)), "the refused exchange was cancelled by the retry")
    }

    func testResetWhileRetryingHasNoUpstreamToCancel() {
        var state = call(in: .retrying)
        XCTAssertEqual(state.streamClosed(), .finish(cancelUpstream: false))
    }

    // MARK: forwarding: the request body

    func testDataWhileForwardingIsBufferedAndResumesAWaitingUpstreamBodyOnce() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.requestData(), .buffer, "the body pull is not waiting")
        XCTAssertEqual(state.requestBodyRead(count: 0, remaining: 0), .wait)
        XCTAssertEqual(state.requestData(), .bufferAndResumeUpstream)
        XCTAssertEqual(state.requestData(), .buffer)
        XCTAssertEqual(state.requestBodyRead(count: 0, remaining: 0), .wait)
        XCTAssertEqual(state.requestEndReceived(), .resumeUpstreamBody)
        XCTAssertEqual(state.requestBodyRead(count: 0, remaining: 0), .end(keepCopy: false))
    }

    func testTheBodyEndsWithItsLastBytesOnceTheRequestEnded() {
        var state = call(in: .forwarding, endStream: true)
        XCTAssertEqual(state.requestBodyRead(count: 10, remaining: 5), .send(keepCopy: true))
        XCTAssertEqual(state.requestBodyRead(count: 5, remaining: 0), .end(keepCopy: true))
    }

    func testClientTrailersWhileForwardingEndTheBody() {
        var state = call(in: .forwarding)
        _ = state.requestBodyRead(count: 0, remaining: 0)
        XCTAssertEqual(state.requestEndReceived(), .resumeUpstreamBody)
        XCTAssertTrue(state.requestEnded)
    }

    func testARetryStartsWithTheUpstreamBodyNotWaiting() {
        var state = call(in: .forwarding)
        _ = state.requestBodyRead(count: 0, remaining: 0)
        _ = state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true)
        _ = state.tokenArrived()
        XCTAssertEqual(state.requestData(), .buffer)
    }

    func testAWaitingUpstreamBodyIsCarriedIntoRelaying() {
        var state = call(in: .forwarding)
        _ = state.requestBodyRead(count: 0, remaining: 0)
        _ = state.upstreamHeaderBlock(endStream: false, informational: false, unauthenticated: false)
        XCTAssertEqual(state.requestData(), .bufferAndResumeUpstream)
        XCTAssertEqual(state.requestBodyRead(count: 0, remaining: 0), .wait)
        XCTAssertEqual(state.requestEndReceived(), .resumeUpstreamBody)
    }

    // MARK: forwarding: the exchange's end

    func testAnUnprocessedExchangeIsSentAgainUpToThePolicysSends() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .resend)
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .resend)
        XCTAssertEqual(state.state, .forwarding(.init(sends: .init(attempt: 1, starts: 3), requestEnded: false, copied: 0)))
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .answer(answer(.failure(broken))))
    }

    /// docs/CONTRACT.md §7: a lost connection may have carried the request's end to Fleet
    /// Engine; only a method that may run twice goes again (a gRPC call never).
    func testALostExchangeIsSentAgainOnlyForAnIdempotentMethod() {
        var post = call(in: .forwarding, endStream: true)
        XCTAssertEqual(post.upstreamClosed(.connectionLost(broken)), .answer(answer(.failure(broken))))
        var put = call(in: .forwarding, endStream: true, idempotent: true)
        XCTAssertEqual(put.upstreamClosed(.connectionLost(broken)), .resend)
        XCTAssertEqual(put.upstreamClosed(.connectionLost(broken)), .resend)
        XCTAssertEqual(put.upstreamClosed(.connectionLost(broken)), .answer(answer(.failure(broken))))
    }

    func testADeclinedExchangeGoesAgainAndCountsAsASend() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamClosed(.declined(broken)), .resend)
        XCTAssertEqual(state.upstreamClosed(.declined(broken)), .resend)
        XCTAssertEqual(state.upstreamClosed(.declined(broken)), .answer(answer(.failure(broken))), "a gRPC call cannot loop")
    }

    func testStartsAreCountedAcrossTheRetry() {
        var state = call(in: .forwarding)
        _ = state.upstreamClosed(.unprocessed(broken))
        _ = state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true)
        _ = state.tokenArrived()
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .answer(answer(.failure(broken))))
    }

    func testAnExchangeWhoseSentBytesWereCopiedIsSentAgainFromTheStart() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.requestBodyRead(count: 100, remaining: 0), .send(keepCopy: true))
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .resend)
        XCTAssertEqual(state.state, .forwarding(.init(sends: .init(attempt: 1, starts: 2), requestEnded: false, copied: 0)),
                       "the copy goes back in front: nothing of this send has left")
    }

    func testAnExchangeThatSentBytesItDidNotCopyIsNotSentAgain() {
        var state = call(in: .forwarding)
        _ = state.requestBodyRead(count: ReplayPolicy.bodyBound + 1, remaining: 0)
        XCTAssertEqual(state.upstreamClosed(.unprocessed(broken)), .answer(answer(.failure(broken))))
        var retried = call(in: .forwarding, idempotent: true)
        _ = retried.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: true)
        _ = retried.tokenArrived()
        XCTAssertEqual(retried.requestBodyRead(count: 1, remaining: 0), .send(keepCopy: true), "the retry keeps its copy too")
        XCTAssertEqual(retried.upstreamClosed(.connectionLost(broken)), .resend, "so a lost retry of a PUT goes again")
    }

    func testAFailedExchangeBeforeTheHeadAnswersLocally() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.upstreamClosed(.failed(broken)), .answer(answer(.failure(broken))))
        XCTAssertEqual(state.state, .answeredLocally(clientBodyWaits: false, requestEnded: false))
    }

    func testALocalAnswerWhileForwardingCancelsTheUpstream() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.refused(.failure(failure)), answer(.failure(failure), cancelUpstream: true))
    }

    func testDeadlineDoesNotApplyOnceForwarded() {
        var state = call(in: .forwarding, deadline: now + 1)
        XCTAssertNil(state.tick(now: now + 5))
        XCTAssertTrue(isForwarding(state))
    }

    func testResetWhileForwardingCancelsTheUpstream() {
        var state = call(in: .forwarding)
        XCTAssertEqual(state.streamClosed(), .finish(cancelUpstream: true))
    }

    // MARK: relaying

    func testUpstreamEndResumesAWaitingClientBodyOnce() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .wait)
        XCTAssertEqual(state.upstreamDataEnded(), .resumeClientBody)
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .end)
        XCTAssertNil(state.upstreamDataEnded())
    }

    func testResponseBytesResumeAWaitingClientBodyOnly() {
        var state = call(in: .relaying)
        XCTAssertEqual(state.responseBytes(now: now), .keep(resumeClientBody: false, armTimerAt: now + 30), "the body read is not waiting")
        XCTAssertEqual(state.responseRead(count: 5, remaining: 0, now: now), .send)
        XCTAssertEqual(state.responseRead(count: 0, remaining: 0, now: now), .wait)
        XCTAssertEqual(state.responseBytes(now: now + 1), .keep(resumeClientBody: true, armTimerAt: now + 31))
        XCTAssertEqual(state.responseBytes(now: now + 2), .keep(resumeClientBody: false, armTimerAt: nil), "already waiting since +1")
    }

    func testResponseBytesBeforeOrAfterRelayingAreDropped() {
        for start: Start in [.forwarding, .answeredLocally, .reset, .closed] {
            var state = call(in: start)
            XCTAssertEqual(state.responseBytes(now: now), .drop, "\(start)")
        }
    }

    func testAClientThatTakesNothingForTheIOTimeoutIsResetAndTheUpstreamCancelled() {
        var state = call(in: .relaying)
        _ = state.responseBytes(now: now)
        XCTAssertEqual(state.tick(now: now + 29), .armTimer(at: now + 30))
        XCTAssertEqual(state.tick(now: now + 30), .resetStalledClient)
        XCTAssertEqual(state.state, .reset)
        XCTAssertEqual(state.streamClosed(), .finish(cancelUpstream: false))
    }

    func testAClientTakingBytesMovesTheIOTimeout() {
        var state = call(in: .relaying)
        _ = state.responseBytes(now: now)
        XCTAssertEqual(state.responseRead(count: 5, remaining: 5, now: now + 20), .send)
        XCTAssertEqual(state.tick(now: now + 30), .armTimer(at: now + 50))
        XCTAssertTrue(isRelaying(state))
    }

    func testAClientThatTookEverythingIsNotTimedOut() {
        var state = call(in: .relaying)
        _ = state.responseBytes(now: now)
        _ = state.responseRead(count: 5, remaining: 0, now: now + 1)
        XCTAssertEqual(state.state, .relaying(.init(requestEnded: false, responseEnded: false, upstreamBodyWaits: false)))
        XCTAssertNil(state.tick(now: now + 300))
        XCTAssertTrue(isRelaying(state))
    }

    func testUpstreamFailureAfterTheHeadResetsTheClient() {
        for end: UpstreamEnd in [.failed(broken), .unprocessed(broken), .connectionLost(broken)] {
            var state = call(in: .relaying)
            XCTAssertEqual(state.upstreamClosed(end), .resetClient(errorCode: H2CallState.internalError))
            XCTAssertEqual(state.state, .reset)
        }
    }

    func testACompletedExchangeChangesNothing() {
        var state = call(in: .relaying)
        _ = state.upstreamDataEnded()
        XCTAssertNil(state.upstreamClosed(.completed))
        XCTAssertEqual(state.state, .relaying(.init(requestEnded: false, responseEnded: true, upstreamBodyWaits: false)))
    }

    func testNoLocalAnswerOnceRelaying() {
        var state = call(in: .relaying, deadline: now + 1)
        XCTAssertNil(state.refused(.failure(failure)))
        XCTAssertNil(state.tick(now: now + 2))
        XCTAssertTrue(isRelaying(state))
    }

    func testAnswerSentWhileRelayingDoesNotReset() {
        var state = call(in: .relaying)
        XCTAssertNil(state.answerSent())
    }

    // MARK: the request's end, carried through every state that outlives the head

    func testTheRequestsEndIsCarriedFromTheHeadToTheAnswer() {
        var ended = call(in: .relaying, endStream: true)
        XCTAssertTrue(ended.requestEnded, "END_STREAM on the head is kept through routing, the token and forwarding")
        XCTAssertEqual(ended.requestBodyRead(count: 0, remaining: 0), .end(keepCopy: false))
        var open = call(in: .relaying)
        XCTAssertFalse(open.requestEnded)
        XCTAssertEqual(open.requestBodyRead(count: 0, remaining: 0), .wait)
        XCTAssertEqual(open.requestEndReceived(), .resumeUpstreamBody)
        XCTAssertTrue(open.requestEnded)
    }

    func testARetryKeepsTheRequestsEnd() {
        var state = call(in: .retrying, endStream: true)
        XCTAssertEqual(state.state, .awaitingToken(callDeadline: nil, sends: .init(attempt: 1, starts: 1), requestEnded: true))
        XCTAssertEqual(state.tokenArrived(), .startUpstream)
        XCTAssertEqual(state.state, .forwarding(.init(sends: .init(attempt: 2, starts: 2), requestEnded: true, copied: 0)))
    }

    func testALocalAnswerResetsOnlyAClientStillSending() {
        var open = call(in: .answeredLocally)
        XCTAssertEqual(open.answerSent(), .resetClient(errorCode: H2CallState.noError))
        var ended = call(in: .answeredLocally)
        XCTAssertNil(ended.requestEndReceived())
        XCTAssertEqual(ended.state, .answeredLocally(clientBodyWaits: false, requestEnded: true))
        XCTAssertNil(ended.answerSent(), "a client that ended its side gets no reset")
        var endedFirst = call(in: .awaitingToken, endStream: true)
        _ = endedFirst.tokenFailed(failure)
        XCTAssertNil(endedFirst.answerSent())
    }

    // MARK: answeredLocally

    func testDataAfterALocalAnswerIsDiscarded() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.requestData(), .discard)
        XCTAssertEqual(state.state, .answeredLocally(clientBodyWaits: false, requestEnded: false))
    }

    func testALocalAnswerBodyIsSentToItsEnd() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.responseRead(count: 10, remaining: 5, now: now), .send)
        XCTAssertEqual(state.responseRead(count: 5, remaining: 0, now: now), .end)
    }

    func testAnswerSentWithTheRequestOpenResetsTheStreamWithNoError() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.answerSent(), .resetClient(errorCode: H2CallState.noError))
    }

    func testAnswerSentAfterTheRequestEndedDoesNotReset() {
        var state = call(in: .answeredLocally, endStream: true)
        XCTAssertNil(state.answerSent())
    }

    func testASecondAnswerIsIllegal() {
        var state = call(in: .answeredLocally)
        XCTAssertNil(state.refused(.failure(failure)))
        XCTAssertNil(state.tick(now: now + 100))
        XCTAssertNil(state.tokenArrived())
        XCTAssertNil(state.routed())
        XCTAssertNil(state.upstreamClosed(.failed(broken)))
    }

    func testStreamCloseAfterALocalAnswerFinishesOnce() {
        var state = call(in: .answeredLocally)
        XCTAssertEqual(state.streamClosed(), .finish(cancelUpstream: false))
        XCTAssertNil(state.streamClosed())
    }

    // MARK: closed

    func testNothingMovesAClosedCall() {
        var state = call(in: .closed)
        XCTAssertNil(state.routed())
        XCTAssertNil(state.tokenArrived())
        XCTAssertNil(state.upstreamDataEnded())
        XCTAssertNil(state.answerSent())
        XCTAssertNil(state.requestEndReceived())
        XCTAssertNil(state.streamClosed())
        XCTAssertNil(state.requestHeadEnded(endStream: true, callDeadline: nil))
        XCTAssertNil(state.tick(now: 5_000))
        XCTAssertNil(state.refused(.headTimeout))
        XCTAssertNil(state.upstreamHeaderBlock(endStream: true, informational: false, unauthenticated: false))
        XCTAssertNil(state.upstreamClosed(.failed(failure)))
        XCTAssertEqual(state.requestData(), .discard)
        XCTAssertEqual(state.state, .closed)
    }
}
