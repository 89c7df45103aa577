import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/1.1 exchange state machine, with times passed in by hand.
final class HTTP1ExchangeTests: XCTestCase {
    let t0 = 1_000.0
    let failure = ProxyFailure.upstreamUnavailable("connection broke")
    typealias Relay = HTTP1Exchange.Relay

    private enum Start {
        case readingHead, readingBody, awaitingToken, awaitingUpstream, forwarding, forwardingHeld, sent, relaying, retrying
        case closingAfterFlush, closed
    }

    /// An exchange in `start` for its first call (number 1), for `method`.
    private func exchange(
        in start: Start, method: String = "GET", keepAlive: Bool = true, http10: Bool = false, expectsContinue: Bool = false,
        body: HTTP1Exchange.BodyPlan? = nil
    ) -> HTTP1Exchange {
        var x = HTTP1Exchange(now: t0, headTimeout: 10)
        func head(_ plan: HTTP1Exchange.BodyPlan) {
            _ = x.headParsed(method: method, http10: http10, keepAlive: keepAlive, expectsContinue: expectsContinue, body: body ?? plan)
        }
        switch start {
        case .readingHead:
            break
        case .readingBody:
            head(.held)
        case .awaitingToken:
            head(.none)
        case .awaitingUpstream:
            head(.none)
            _ = x.tokenArrived(call: 1)
        case .forwarding, .forwardingHeld, .sent, .relaying, .retrying:
            // `.forwarding`: a long body streams; the others hold theirs.
            head(start == .forwarding ? .streamed : .none)
            _ = x.tokenArrived(call: 1)
            _ = x.upstreamReady(call: 1)
            if start == .sent || start == .relaying || start == .retrying { _ = x.requestSent() }
            if start == .relaying { _ = x.responseHead(status: 200, framing: .contentLength(2), declared: .contentLength(2)) }
            if start == .retrying { _ = x.responseHead(status: 401, framing: .contentLength(0), declared: .contentLength(0)) }
        case .closingAfterFlush:
            _ = x.headRefused(.malformedRequest("bad"), bodySkippable: false)
        case .closed:
            _ = x.close()
        }
        return x
    }

    // MARK: readingHead

    func testANewConnectionWaitsForAHeadWithADeadlineItsTimerIsArmedFor() {
        let x = exchange(in: .readingHead)
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 10))
        XCTAssertEqual(x.headTimerAt, t0 + 10)
        XCTAssertNil(x.call)
        XCTAssertTrue(x.mayBeHTTP2)
    }

    func testHeadDeadlineWithBytesBufferedClosesTheConnection() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headTimerFired(now: t0 + 10, buffered: 2), .close(reason: "request head not complete within 10.0 s"))
        XCTAssertEqual(x.phase, .closed)
        XCTAssertNil(x.close(), "closed once")
    }

    func testATimerFiringEarlyIsJudgedAtTheTimeItWasArmedFor() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headTimerFired(now: t0 + 9.9, buffered: 5), .close(reason: "request head not complete within 10.0 s"))
    }

    func testAStaleHeadTimerChangesNothing() {
        var x = exchange(in: .readingHead)
        _ = x.headTimerFired(now: t0 + 10, buffered: 0)
        let before = x
        XCTAssertNil(x.headTimerFired(now: t0 + 11, buffered: 5), "not armed")
        XCTAssertEqual(x, before)
    }

    func testHeadDeadlineWithNothingBufferedLeavesAnIdleConnectionToTheIdleTimeout() {
        var x = exchange(in: .readingHead)
        XCTAssertNil(x.headTimerFired(now: t0 + 10, buffered: 0))
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        XCTAssertNil(x.headTimerAt)
        // The first byte afterwards starts a whole new deadline.
        XCTAssertEqual(x.bytesArrived(now: t0 + 30), .armHeadTimerAndReadHead(at: t0 + 40))
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 40))
        XCTAssertEqual(x.headTimerFired(now: t0 + 40, buffered: 1), .close(reason: "request head not complete within 10.0 s"))
    }

    func testBytesArrivingBeforeTheDeadlineDoNotExtendIt() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.bytesArrived(now: t0 + 5), .readHead)
        XCTAssertEqual(x.bytesArrived(now: t0 + 9), .readHead)
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 10))
    }

    func testAnArmedTimerIsLeftForALaterDeadlineAndReArmedWhenItFires() {
        var x = exchange(in: .sent)
        _ = x.responseHead(status: 200, framing: .contentLength(2), declared: .contentLength(2))
        XCTAssertEqual(x.responseEnded(), .finishCall(keepAlive: true))
        XCTAssertNil(x.readingNextHead(now: t0 + 4))
        XCTAssertEqual(x.headTimerAt, t0 + 10, "left armed for the earlier deadline")
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 14))
        XCTAssertEqual(x.headTimerFired(now: t0 + 10, buffered: 3), .rearm(at: t0 + 14))
        XCTAssertEqual(x.headTimerAt, t0 + 14)
        XCTAssertEqual(x.headTimerFired(now: t0 + 14, buffered: 3), .close(reason: "request head not complete within 10.0 s"))
    }

    func testATimerThatFiredDuringACallIsArmedAgainForTheNextHead() {
        var x = exchange(in: .sent)
        XCTAssertNil(x.headTimerFired(now: t0 + 10, buffered: 0), "no head awaited")
        _ = x.responseHead(status: 200, framing: .contentLength(2), declared: .contentLength(2))
        _ = x.responseEnded()
        XCTAssertEqual(x.readingNextHead(now: t0 + 12), .arm(at: t0 + 22))
    }

    func testAHeadWithoutAChunkedBodyGoesForItsToken() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none),
                       .lookUpToken(call: 1))
        XCTAssertEqual(x.phase, .awaitingToken(x.call!))
        XCTAssertEqual(x.call?.isIdempotent, true)
        XCTAssertEqual(x.call?.keepAlive, true)
        XCTAssertFalse(x.mayBeHTTP2)
    }

    func testAHeadWithAShortDeclaredBodyReadsItWholeFirstSoTheCallCanBeSentAgain() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "PUT", http10: false, keepAlive: true, expectsContinue: false, body: .held),
                       .readBody(writeContinue: false))
        XCTAssertEqual(x.bytesArrived(now: t0 + 1), .readBody, "its bytes may come in any number of pieces")
        XCTAssertEqual(x.bodyRead(), .lookUpToken(call: 1))
        XCTAssertEqual(x.call?.replayable, true)
    }

    func testALongDeclaredBodyStreamsAndIsNotReplayable() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "PUT", http10: false, keepAlive: true, expectsContinue: false, body: .streamed),
                       .lookUpToken(call: 1))
        XCTAssertEqual(x.call?.replayable, false)
    }

    func testAChunkedHeadReadsItsBodyFirstAndSaysContinueWhenAsked() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "POST", http10: false, keepAlive: true, expectsContinue: true, body: .held),
                       .readBody(writeContinue: true))
        guard case .readingBody = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertEqual(x.call?.continueOwed, false, "said once")

        var quiet = exchange(in: .readingHead)
        XCTAssertEqual(quiet.headParsed(method: "POST", http10: false, keepAlive: true, expectsContinue: false, body: .held),
                       .readBody(writeContinue: false))
    }

    func testCallsAreNumberedAcrossTheConnection() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headRefused(.notFleetEngineCall("no"), bodySkippable: true), .refuse(.notFleetEngineCall("no"), keepAlive: true))
        XCTAssertEqual(x.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none),
                       .lookUpToken(call: 2))
    }

    func testARefusedHeadKeepsTheConnectionOnlyWhenAllowed() {
        var keep = exchange(in: .readingHead)
        XCTAssertEqual(keep.headRefused(.notFleetEngineCall("no"), bodySkippable: true), .refuse(.notFleetEngineCall("no"), keepAlive: true))
        XCTAssertEqual(keep.phase, .readingHead(deadline: nil))
        XCTAssertNil(keep.readingNextHead(now: t0 + 1))
        XCTAssertEqual(keep.headTimerAt, t0 + 10, "left armed for the earlier deadline")
        XCTAssertEqual(keep.phase, .readingHead(deadline: t0 + 11))

        var close = exchange(in: .readingHead)
        XCTAssertEqual(close.headRefused(.malformedRequest("bad"), bodySkippable: false), .refuse(.malformedRequest("bad"), keepAlive: false))
        XCTAssertEqual(close.phase, .closingAfterFlush)
        XCTAssertEqual(close.outputFlushed(), .close(reason: "answered, not keep-alive"))
        XCTAssertEqual(close.phase, .closed)
    }

    func testThePrefaceAfterAHeadIsNotAHandOver() {
        var x = exchange(in: .sent)
        _ = x.responseHead(status: 200, framing: .contentLength(2), declared: .contentLength(2))
        _ = x.responseEnded()
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        XCTAssertNil(x.http2PrefaceArrived())
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
    }

    func testTheHTTP2PrefaceHandsTheConnectionOver() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.http2PrefaceArrived(), .handOverToHTTP2)
        XCTAssertEqual(x.phase, .closed)
        XCTAssertNil(x.headTimerAt)
        XCTAssertNil(x.close(), "the socket is HTTP/2's now")
    }

    func testIllegalEventsWhileReadingAHeadChangeNothing() {
        var x = exchange(in: .readingHead)
        let before = x
        XCTAssertNil(x.bodyRead())
        XCTAssertNil(x.bodyFailed(failure))
        XCTAssertNil(x.tokenArrived(call: 1))
        XCTAssertNil(x.tokenFailed(call: 1, failure, bodySkippable: true))
        XCTAssertNil(x.upstreamReady(call: 1))
        XCTAssertNil(x.requestSent())
        XCTAssertNil(x.responseHead(status: 200, framing: .none, declared: .none))
        XCTAssertNil(x.responseEnded())
        XCTAssertNil(x.responseFailed(failure, retry: .connectionLost))
        XCTAssertNil(x.outputFlushed())
        XCTAssertNil(x.readingNextHead(now: t0))
        XCTAssertEqual(x, before)
    }

    // MARK: read timeouts

    func testAReadTimeoutClosesOnlyWhileTheClientOwesBytes() {
        var idle = exchange(in: .readingHead)
        XCTAssertEqual(idle.readTimedOut(buffered: 0, described: "timeout"), .close(reason: "idle"))
        XCTAssertEqual(idle.phase, .closed)
        var slowHead = exchange(in: .readingHead)
        XCTAssertEqual(slowHead.readTimedOut(buffered: 3, described: "timeout"), .close(reason: "request head too slow"))
        var slowChunks = exchange(in: .readingBody, method: "POST")
        XCTAssertEqual(slowChunks.readTimedOut(buffered: 0, described: "read timeout"), .close(reason: "read timeout"))
        var slowBody = exchange(in: .forwarding, method: "POST")
        XCTAssertEqual(slowBody.readTimedOut(buffered: 0, described: "read timeout"), .close(reason: "read timeout"))

        for start in [Start.awaitingToken, .awaitingUpstream, .sent, .relaying, .retrying] {
            var waiting = exchange(in: start)
            let before = waiting
            XCTAssertEqual(waiting.readTimedOut(buffered: 0, described: "timeout"), .enableReading, "\(start)")
            XCTAssertEqual(waiting, before)
        }
    }

    // MARK: readingBody

    func testAWholeChunkedBodyIsHeldAndTheCallGoesOn() {
        var x = exchange(in: .readingBody, method: "POST")
        XCTAssertEqual(x.bytesArrived(now: t0 + 1), .readBody)
        XCTAssertEqual(x.bodyRead(), .lookUpToken(call: 1))
        guard case .awaitingToken = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertEqual(x.call?.replayable, true)
        _ = x.tokenArrived(call: 1)
        XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: true),
                       "already held")
    }

    func testIllegalEventsWhileReadingABodyChangeNothing() {
        var x = exchange(in: .readingBody, method: "POST")
        let before = x
        XCTAssertEqual(x.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none), .endCall)
        XCTAssertNil(x.headRefused(failure, bodySkippable: true))
        XCTAssertNil(x.tokenArrived(call: 1))
        XCTAssertNil(x.headTimerFired(now: t0 + 100, buffered: 10))
        XCTAssertEqual(x, before.withTimerFired, "only the timer's arming changed")
    }

    func testABadChunkedBodyIsRefusedAndCloses() {
        var x = exchange(in: .readingBody, method: "POST")
        XCTAssertEqual(x.bodyFailed(.malformedRequest("bad chunk")), .refuse(.malformedRequest("bad chunk"), keepAlive: false))
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertNil(x.call)
    }

    // MARK: awaitingToken / awaitingUpstream

    func testATokenLeadsToAnUpstreamConnectionThenToSending() {
        var x = exchange(in: .awaitingToken)
        XCTAssertNil(x.bytesArrived(now: t0 + 1), "pipelined bytes wait")
        XCTAssertEqual(x.tokenArrived(call: 1), .acquireUpstream(call: 1))
        guard case .awaitingUpstream = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: true))
        guard case .forwarding(let call, let attempt) = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertEqual(call.sends, 1)
        XCTAssertEqual(call.replayable, true)
        XCTAssertEqual(attempt, HTTP1Exchange.Attempt())
        XCTAssertFalse(x.requestFullySent)
    }

    func testABodyStillArrivingIsStreamedAndContinueSaidOnce() {
        var x = exchange(in: .awaitingUpstream, method: "POST", expectsContinue: true, body: .streamed)
        XCTAssertEqual(x.upstreamReady(call: 1), .stream(writeContinue: true, firstAttempt: true))
        XCTAssertEqual(x.call?.replayable, false)
        XCTAssertEqual(x.bytesArrived(now: t0 + 1), .pumpBody)
        XCTAssertNil(x.requestSent())
        XCTAssertTrue(x.requestFullySent)
        XCTAssertNil(x.bytesArrived(now: t0 + 1), "the body is all sent")
    }

    func testATokenOrConnectionForAnotherCallIsIgnored() {
        var x = exchange(in: .awaitingToken)
        let before = x
        XCTAssertNil(x.tokenArrived(call: 7))
        XCTAssertNil(x.tokenFailed(call: 7, failure, bodySkippable: true))
        XCTAssertEqual(x, before)
        _ = x.tokenArrived(call: 1)
        XCTAssertNil(x.upstreamReady(call: 7))
    }

    func testATokenFailureIsRefusedKeepingTheConnectionWhenTheBodyWasConsumed() {
        var x = exchange(in: .awaitingToken)
        let refused = ProxyFailure.providerUnavailable("down")
        XCTAssertEqual(x.tokenFailed(call: 1, refused, bodySkippable: true), .refuse(refused, keepAlive: true))
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))

        var unread = exchange(in: .awaitingToken)
        XCTAssertEqual(unread.tokenFailed(call: 1, refused, bodySkippable: false), .refuse(refused, keepAlive: false))
        XCTAssertEqual(unread.phase, .closingAfterFlush)
    }

    func testAnExchangeThatFailedBeforeSendingKeepsTheConnectionWhenTheBodyCanBeSkipped() {
        var x = exchange(in: .forwarding, method: "POST")
        XCTAssertEqual(x.responseFailed(failure, bodySkippable: true), .refuse(failure, keepAlive: true))
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        var unread = exchange(in: .forwarding, method: "POST")
        XCTAssertEqual(unread.responseFailed(failure, bodySkippable: false), .refuse(failure, keepAlive: false))
    }

    func testAClientWhoseBodyWaitsForTheUpstreamIsNotTimedOut() {
        var x = exchange(in: .forwarding, method: "PUT")
        XCTAssertEqual(x.readTimedOut(buffered: 10, described: "timeout"), .enableReading, "its bytes wait in the input")
        XCTAssertEqual(x.readTimedOut(buffered: 0, described: "timeout"), .close(reason: "timeout"), "it stopped sending")
    }

    func testARefusalForAClientThatAskedToCloseCloses() {
        var x = exchange(in: .awaitingToken, keepAlive: false)
        XCTAssertEqual(x.tokenFailed(call: 1, failure, bodySkippable: true), .refuse(failure, keepAlive: false))
        XCTAssertEqual(x.phase, .closingAfterFlush)
    }

    func testIllegalEventsWhileAwaitingChangeNothing() {
        var token = exchange(in: .awaitingToken)
        let tokenBefore = token
        XCTAssertNil(token.upstreamReady(call: 1))
        XCTAssertNil(token.responseHead(status: 200, framing: .none, declared: .none))
        XCTAssertNil(token.responseEnded())
        XCTAssertNil(token.bodyRead())
        XCTAssertEqual(token, tokenBefore)

        var upstream = exchange(in: .awaitingUpstream)
        let upstreamBefore = upstream
        XCTAssertNil(upstream.tokenArrived(call: 1))
        XCTAssertNil(upstream.requestSent())
        XCTAssertNil(upstream.responseFailed(failure, retry: .connectionLost))
        XCTAssertEqual(upstream, upstreamBefore)
    }

    // MARK: forwarding

    func testACallEndsWhenBothRequestAndAnswerAreDoneInEitherOrder() {
        var x = exchange(in: .forwarding)
        XCTAssertEqual(x.responseHead(status: 200, framing: .contentLength(2), declared: .contentLength(2)),
                       .relay(Relay(framing: .contentLength(2), http10: false, closeAfter: false)))
        XCTAssertTrue(x.isRelaying)
        XCTAssertNil(x.responseEnded())
        XCTAssertFalse(x.isRelaying)
        XCTAssertEqual(x.requestSent(), .finishCall(keepAlive: true))
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        XCTAssertNil(x.call)

        var y = exchange(in: .sent)
        XCTAssertEqual(y.responseHead(status: 200, framing: .chunked, declared: .chunked),
                       .relay(Relay(framing: .chunked, http10: false, closeAfter: false)))
        XCTAssertEqual(y.responseEnded(), .finishCall(keepAlive: true))
    }

    func testA401ToAHeldRequestIsRetriedOnceWithAFreshToken() {
        var x = exchange(in: .sent)
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(5), declared: .contentLength(5)), .dropForRetry)
        guard case .retrying = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertFalse(x.isRelaying, "its body is dropped")
        XCTAssertTrue(x.requestFullySent)
        XCTAssertEqual(x.responseEnded(), .refetchToken(call: 1))
        guard case .awaitingToken = x.phase else { return XCTFail("\(x.phase)") }
        XCTAssertEqual(x.tokenArrived(call: 1), .acquireUpstream(call: 1))
        XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: false))
        XCTAssertEqual(x.call?.sends, 2)
        XCTAssertNil(x.requestSent())
        XCTAssertTrue(x.requestFullySent)
        // The second 401 is relayed.
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(5), declared: .contentLength(5)),
                       .relay(Relay(framing: .contentLength(5), http10: false, closeAfter: false)))
    }

    func testA401ArrivingBeforeTheRequestLeftWholeWaitsForItInRetrying() {
        var x = exchange(in: .forwardingHeld)
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(0), declared: .contentLength(0)), .dropForRetry)
        XCTAssertFalse(x.requestFullySent, "a connection whose request was cut short is not reused")
        XCTAssertNil(x.requestSent())
        XCTAssertTrue(x.requestFullySent)
    }

    func testA401ToAStreamedRequestIsRelayed() {
        var x = exchange(in: .forwarding)
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(0), declared: .contentLength(0)),
                       .relay(Relay(framing: .contentLength(0), http10: false, closeAfter: false)))
    }

    func testTheKeepAliveRaceResendsAHeldIdempotentRequestUpToThePolicysSends() {
        var x = exchange(in: .sent, method: "PUT")
        for _ in 1..<ReplayPolicy.maxSends {
            XCTAssertEqual(x.responseFailed(failure, retry: .connectionLost), .resend(call: 1))
            guard case .awaitingUpstream = x.phase else { return XCTFail("\(x.phase)") }
            XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: false))
            XCTAssertNil(x.requestSent())
            XCTAssertTrue(x.requestFullySent)
        }
        XCTAssertEqual(x.responseFailed(failure, retry: .connectionLost), .refuse(failure, keepAlive: true))
    }

    func testAnUnprocessedExchangeIsSentAgainWhateverTheMethodUpToThePolicysSends() {
        var x = exchange(in: .sent, method: "POST")
        for _ in 1..<ReplayPolicy.maxSends {
            XCTAssertEqual(x.responseFailed(failure, retry: .unprocessed, bodyIntact: true), .resend(call: 1))
            XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: false))
            XCTAssertNil(x.requestSent())
        }
        XCTAssertEqual(x.responseFailed(failure, retry: .unprocessed, bodyIntact: true), .refuse(failure, keepAlive: true))
    }

    func testALostConnectionResendsAStreamedIdempotentRequestOnlyWhileNoneOfItsBodyLeft() {
        var put = exchange(in: .forwarding, method: "PUT")
        XCTAssertEqual(put.responseFailed(failure, retry: .connectionLost, bodyIntact: true), .resend(call: 1))
        XCTAssertEqual(put.upstreamReady(call: 1), .stream(writeContinue: false, firstAttempt: false), "its body still streams")
        XCTAssertEqual(put.responseFailed(failure, retry: .connectionLost, bodyIntact: false), .refuse(failure, keepAlive: false))
        var post = exchange(in: .forwarding, method: "POST")
        XCTAssertEqual(post.responseFailed(failure, retry: .connectionLost, bodyIntact: true), .refuse(failure, keepAlive: false),
                       "its end may have been processed")
    }

    func testA401AfterAResendIsStillRetriedOnceWithAFreshToken() {
        var x = exchange(in: .sent, method: "POST")
        XCTAssertEqual(x.responseFailed(failure, retry: .unprocessed), .resend(call: 1))
        _ = x.upstreamReady(call: 1)
        _ = x.requestSent()
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(0), declared: .contentLength(0)), .dropForRetry)
        XCTAssertEqual(x.call?.tokenRetried, true)
        XCTAssertEqual(x.responseEnded(), .refetchToken(call: 1))
        _ = x.tokenArrived(call: 1)
        _ = x.upstreamReady(call: 1)
        _ = x.requestSent()
        XCTAssertEqual(x.responseHead(status: 401, framing: .contentLength(0), declared: .contentLength(0)),
                       .relay(Relay(framing: .contentLength(0), http10: false, closeAfter: false)), "once")
    }

    func testARefusedStreamWhoseBodyPartlyLeftIsRefused() {
        var x = exchange(in: .forwarding, method: "PUT")
        XCTAssertEqual(x.responseFailed(failure, retry: .unprocessed, bodyIntact: false), .refuse(failure, keepAlive: false))
        XCTAssertEqual(x.phase, .closingAfterFlush)
    }

    func testARefusalAfterTheHeadWasRelayedClosesAfterFlush() {
        var x = exchange(in: .relaying)
        XCTAssertEqual(x.responseFailed(failure, retry: .unprocessed, bodyIntact: true), .closeAfterFlush)
    }

    func testADeclinedHTTP2SendGoesAgainAndDoesNotCountAsATry() {
        var x = exchange(in: .sent, method: "POST")
        XCTAssertEqual(x.exchangeDeclined(failure), .resend(call: 1))
        // Still the first try: the keep-alive race may send it once more later.
        XCTAssertEqual(x.upstreamReady(call: 1), .sendHeld(firstAttempt: true))
        XCTAssertEqual(x.exchangeDeclined(failure), .resend(call: 1))
    }

    func testADeclineAfterTheHeadWasRelayedClosesAfterFlush() {
        var x = exchange(in: .relaying)
        XCTAssertEqual(x.exchangeDeclined(failure), .closeAfterFlush)
    }

    func testTheKeepAliveRaceNeverResendsAPostOrPatch() {
        for method in ["POST", "PATCH"] {
            var x = exchange(in: .sent, method: method)
            XCTAssertEqual(x.responseFailed(failure, retry: .connectionLost), .refuse(failure, keepAlive: true), method)
            XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        }
    }

    func testAFailureThatIsNotTheRaceIsRefused() {
        var x = exchange(in: .sent)
        XCTAssertEqual(x.responseFailed(failure), .refuse(failure, keepAlive: true))
        var streamed = exchange(in: .forwarding)
        XCTAssertEqual(streamed.responseFailed(failure, retry: .connectionLost), .refuse(failure, keepAlive: false),
                       "not held: not resent, and its body is cut")
    }

    func testAFailureMidAnswerClosesAfterWhatWasRelayed() {
        var x = exchange(in: .relaying)
        XCTAssertEqual(x.responseFailed(failure), .closeAfterFlush)
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertNil(x.call)
    }

    func testAFailureWhileRetryingAfter401IsRefused() {
        var x = exchange(in: .retrying)
        XCTAssertEqual(x.responseFailed(failure, retry: .connectionLost), .refuse(failure, keepAlive: true))
    }

    func testIllegalEventsWhileForwardingChangeNothing() {
        var x = exchange(in: .relaying)
        let before = x
        XCTAssertEqual(x.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none), .endCall)
        XCTAssertNil(x.tokenArrived(call: 1))
        XCTAssertNil(x.upstreamReady(call: 1))
        XCTAssertNil(x.bodyRead())
        XCTAssertNil(x.outputFlushed())
        XCTAssertNil(x.responseHead(status: 200, framing: .none, declared: .none), "one answer a try")
        XCTAssertNil(x.headTimerFired(now: t0 + 100, buffered: 1))
        XCTAssertEqual(x, before.withTimerFired)
    }

    // MARK: the relayed answer's framing and keep-alive

    private func relay(
        status: Int = 200, _ framing: BodyFraming, declared: BodyFraming? = nil, http10: Bool = false, keepAlive: Bool = true,
        method: String = "GET"
    ) -> (HTTP1Exchange.ResponseHeadAction?, HTTP1Exchange.ResponseEndAction?) {
        var x = exchange(in: .sent, method: method, keepAlive: keepAlive, http10: http10)
        let head = x.responseHead(status: status, framing: framing, declared: declared ?? framing)
        return (head, x.responseEnded())
    }

    func testAChunkedAnswerToAnHTTP10ClientIsDecodedAndTheConnectionCloses() {
        let (head, end) = relay(.chunked, http10: true)
        XCTAssertEqual(head, .relay(Relay(framing: .dechunked, http10: true, closeAfter: true)))
        XCTAssertEqual(end, .finishCall(keepAlive: false))
    }

    func testAnAnswerThatEndsAtCloseClosesTheConnection() {
        let (head, end) = relay(.untilClose)
        XCTAssertEqual(head, .relay(Relay(framing: .untilClose, http10: false, closeAfter: true)))
        XCTAssertEqual(end, .finishCall(keepAlive: false))

        var x = exchange(in: .sent)
        _ = x.responseHead(status: 200, framing: .untilClose, declared: .untilClose)
        _ = x.responseEnded()
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertEqual(x.outputFlushed(), .close(reason: "answered, not keep-alive"))
        XCTAssertEqual(x.phase, .closed)
    }

    func testHeadAnd304AnswersKeepTheLengthTheyDeclare() {
        let (head, end) = relay(.none, declared: .contentLength(1234), method: "HEAD")
        XCTAssertEqual(head, .relay(Relay(framing: .none(declaredLength: 1234), http10: false, closeAfter: false)))
        XCTAssertEqual(end, .finishCall(keepAlive: true))
        let (notModified, _) = relay(status: 304, .none, declared: .contentLength(99))
        XCTAssertEqual(notModified, .relay(Relay(framing: .none(declaredLength: 99), http10: false, closeAfter: false)))
        let (noContent, _) = relay(status: 204, .none, declared: .contentLength(7))
        XCTAssertEqual(noContent, .relay(Relay(framing: .none(declaredLength: nil), http10: false, closeAfter: false)),
                       "a 204 has no length")
        let (chunkedHead, _) = relay(.none, declared: .chunked, method: "HEAD")
        XCTAssertEqual(chunkedHead, .relay(Relay(framing: .none(declaredLength: nil), http10: false, closeAfter: false)))
    }

    func testKeepAliveIsKeptOtherwiseAndAnHTTP10ClientIsToldSo() {
        let (head, end) = relay(.contentLength(3), http10: true)
        let kept = Relay(framing: .contentLength(3), http10: true, closeAfter: false)
        XCTAssertEqual(head, .relay(kept))
        XCTAssertTrue(kept.saysKeepAlive)
        XCTAssertEqual(end, .finishCall(keepAlive: true))
        XCTAssertFalse(Relay(framing: .chunked, http10: false, closeAfter: false).saysKeepAlive)
    }

    func testAClientThatAskedToCloseIsAnsweredWithClose() {
        let (head, end) = relay(.contentLength(3), keepAlive: false)
        XCTAssertEqual(head, .relay(Relay(framing: .contentLength(3), http10: false, closeAfter: true)))
        XCTAssertEqual(end, .finishCall(keepAlive: false))
    }

    // MARK: draining, closing

    func testDrainClosesAnIdleConnectionAndEndsABusyOneAfterItsCall() {
        var idle = exchange(in: .readingHead)
        XCTAssertEqual(idle.drain(buffered: 0), .close(reason: "draining"))
        XCTAssertEqual(idle.phase, .closed)

        var busy = exchange(in: .relaying)
        XCTAssertNil(busy.drain(buffered: 0))
        XCTAssertTrue(busy.isRelaying, "the answer goes on")
        XCTAssertEqual(busy.responseEnded(), .finishCall(keepAlive: false))
        XCTAssertEqual(busy.phase, .closingAfterFlush)

        var pending = exchange(in: .readingHead)
        XCTAssertNil(pending.drain(buffered: 3), "a head already arriving is served")
        XCTAssertEqual(pending.phase, .readingHead(deadline: t0 + 10))
        XCTAssertEqual(pending.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none),
                       .lookUpToken(call: 1))
        XCTAssertEqual(pending.call?.keepAlive, false)
    }

    func testADrainingConnectionAnswersWithCloseAndRefusesWithClose() {
        var sent = exchange(in: .sent)
        _ = sent.drain(buffered: 0)
        XCTAssertEqual(sent.responseHead(status: 200, framing: .contentLength(1), declared: .contentLength(1)),
                       .relay(Relay(framing: .contentLength(1), http10: false, closeAfter: true)))

        var waiting = exchange(in: .awaitingToken)
        _ = waiting.drain(buffered: 0)
        XCTAssertEqual(waiting.tokenFailed(call: 1, failure, bodySkippable: true), .refuse(failure, keepAlive: false))

        var head = exchange(in: .readingHead)
        _ = head.drain(buffered: 1)
        XCTAssertEqual(head.headRefused(failure, bodySkippable: true), .refuse(failure, keepAlive: false))
    }

    func testNothingHappensOnceClosingOrClosed() {
        for start in [Start.closingAfterFlush, .closed] {
            var x = exchange(in: start)
            let before = x
            XCTAssertEqual(x.headParsed(method: "GET", http10: false, keepAlive: true, expectsContinue: false, body: .none), .endCall)
            XCTAssertNil(x.headRefused(failure, bodySkippable: true))
            XCTAssertNil(x.tokenArrived(call: 1))
            XCTAssertNil(x.responseEnded())
            XCTAssertNil(x.bytesArrived(now: t0 + 100))
            XCTAssertEqual(x.readTimedOut(buffered: 1, described: "timeout"), .enableReading)
            XCTAssertNil(x.drain(buffered: 0))
            XCTAssertEqual(x.phase, before.phase)
        }
        var closed = exchange(in: .closed)
        XCTAssertNil(closed.headTimerAt)
        XCTAssertNil(closed.headTimerFired(now: t0 + 100, buffered: 1))
        XCTAssertNil(closed.outputFlushed())
        XCTAssertNil(closed.close())
    }
}

private extension HTTP1Exchange {
    /// The same exchange after its head timer fired outside `readingHead` (it is no longer armed).
    var withTimerFired: HTTP1Exchange {
        var x = self
        _ = x.headTimerFired(now: .infinity, buffered: 0)
        return x
    }
}

extension HTTP1Exchange {
    /// Whether the whole request has left for the upstream, as the phase records it.
    var requestFullySent: Bool {
        switch phase {
        case .forwarding(_, let attempt): return attempt.requestSent
        case .retrying(_, let sent): return sent
        default: return true
        }
    }
}
