import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/1.1 exchange state machine, with times passed in by hand.
final class HTTP1ExchangeTests: XCTestCase {
    let t0 = 1_000.0
    let failure = ProxyFailure.upstreamUnavailable("connection broke")

    private enum Start {
        case readingHead, readingBody, awaitingToken, awaitingUpstream, forwarding, forwardingHeld, sent, relaying, retrying
        case closingAfterFlush, closed
    }

    /// An exchange in `start`, for `method` (a held request unless said otherwise).
    private func exchange(in start: Start, method: String = "GET", keepAlive: Bool = true) -> HTTP1Exchange {
        var x = HTTP1Exchange(now: t0, headTimeout: 10)
        switch start {
        case .readingHead:
            break
        case .readingBody:
            _ = x.headParsed(method: method, keepAlive: keepAlive, chunked: true)
        case .awaitingToken:
            _ = x.headParsed(method: method, keepAlive: keepAlive, chunked: false)
        case .awaitingUpstream:
            _ = x.headParsed(method: method, keepAlive: keepAlive, chunked: false)
            _ = x.tokenReady()
        case .forwarding, .forwardingHeld, .sent, .relaying, .retrying:
            _ = x.headParsed(method: method, keepAlive: keepAlive, chunked: false)
            _ = x.tokenReady()
            _ = x.upstreamReady()
            if start != .forwarding { x.requestHeld() }
            if start == .sent || start == .relaying || start == .retrying { _ = x.requestSent() }
            if start == .relaying { _ = x.responseHead(status: 200) }
            if start == .retrying { _ = x.responseHead(status: 401) }
        case .closingAfterFlush:
            _ = x.headRefused(.malformedRequest("bad"), keepAlive: false)
        case .closed:
            x.closed()
        }
        return x
    }

    // MARK: readingHead

    func testANewConnectionWaitsForAHeadWithADeadline() {
        let x = exchange(in: .readingHead)
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 10))
        XCTAssertNil(x.call)
    }

    func testHeadDeadlineWithBytesBufferedClosesTheConnection() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 10, buffered: 2), [.close(reason: "request head not complete within 10.0 s")])
        XCTAssertEqual(x.phase, .closed)
    }

    func testAStaleHeadTimerChangesNothing() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 9.9, buffered: 5), [])
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 10))
    }

    func testHeadDeadlineWithNothingBufferedLeavesAnIdleConnectionToTheIdleTimeout() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 10, buffered: 0), [])
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        // The first byte afterwards starts a whole new deadline.
        XCTAssertEqual(x.bytesArrived(now: t0 + 30), [.armHeadDeadline(t0 + 40)])
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 40))
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 40, buffered: 1), [.close(reason: "request head not complete within 10.0 s")])
    }

    func testBytesArrivingBeforeTheDeadlineDoNotExtendIt() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.bytesArrived(now: t0 + 5), [])
        XCTAssertEqual(x.bytesArrived(now: t0 + 9), [])
        XCTAssertEqual(x.phase, .readingHead(deadline: t0 + 10))
    }

    func testAHeadWithoutAChunkedBodyGoesForItsToken() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "GET", keepAlive: true, chunked: false), [.lookUpToken])
        XCTAssertEqual(x.phase, .awaitingToken)
        XCTAssertEqual(x.call?.method, "GET")
        XCTAssertEqual(x.call?.keepAlive, true)
    }

    func testAChunkedHeadReadsItsBodyFirst() {
        var x = exchange(in: .readingHead)
        XCTAssertEqual(x.headParsed(method: "POST", keepAlive: true, chunked: true), [.readBody])
        XCTAssertEqual(x.phase, .readingBody)
    }

    func testARefusedHeadKeepsTheConnectionOnlyWhenAllowed() {
        var keep = exchange(in: .readingHead)
        XCTAssertEqual(keep.headRefused(.notFleetEngineCall("no"), keepAlive: true), [.refuse(.notFleetEngineCall("no"), keepAlive: true)])
        XCTAssertEqual(keep.phase, .readingHead(deadline: nil))
        XCTAssertEqual(keep.readingNextHead(now: t0 + 1), [.armHeadDeadline(t0 + 11)])

        var close = exchange(in: .readingHead)
        XCTAssertEqual(close.headRefused(.malformedRequest("bad"), keepAlive: false), [.refuse(.malformedRequest("bad"), keepAlive: false)])
        XCTAssertEqual(close.phase, .closingAfterFlush)
    }

    func testIllegalEventsWhileReadingAHeadChangeNothing() {
        var x = exchange(in: .readingHead)
        let before = x
        XCTAssertEqual(x.bodyRead(), [])
        XCTAssertEqual(x.tokenReady(), [])
        XCTAssertEqual(x.upstreamReady(), [])
        XCTAssertEqual(x.requestSent(), [])
        XCTAssertEqual(x.responseHead(status: 200), [])
        XCTAssertEqual(x.responseEnded(), [])
        XCTAssertEqual(x.responseFailed(failure, retryable: true), [])
        XCTAssertEqual(x.outputFlushed(), [])
        XCTAssertEqual(x.readingNextHead(now: t0), [])
        XCTAssertEqual(x, before)
    }

    // MARK: readingBody

    func testAWholeChunkedBodyIsHeldAndTheCallGoesOn() {
        var x = exchange(in: .readingBody, method: "POST")
        XCTAssertEqual(x.bodyRead(), [.lookUpToken])
        XCTAssertEqual(x.phase, .awaitingToken)
        XCTAssertEqual(x.call?.replayable, true)
    }

    func testIllegalEventsWhileReadingABodyChangeNothing() {
        var x = exchange(in: .readingBody, method: "POST")
        let before = x
        XCTAssertEqual(x.headParsed(method: "GET", keepAlive: true, chunked: false), [])
        XCTAssertEqual(x.tokenReady(), [])
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 100, buffered: 10), [])
        XCTAssertEqual(x.bytesArrived(now: t0 + 100), [])
        XCTAssertEqual(x, before)
    }

    func testABadChunkedBodyIsRefusedAndCloses() {
        var x = exchange(in: .readingBody, method: "POST")
        XCTAssertEqual(x.refuse(.malformedRequest("bad chunk"), bodyConsumed: false), [.refuse(.malformedRequest("bad chunk"), keepAlive: false)])
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertNil(x.call)
    }

    // MARK: awaitingToken / awaitingUpstream

    func testATokenLeadsToAnUpstreamConnectionThenToSending() {
        var x = exchange(in: .awaitingToken)
        XCTAssertEqual(x.tokenReady(), [.acquireUpstream])
        XCTAssertEqual(x.phase, .awaitingUpstream)
        XCTAssertEqual(x.upstreamReady(), [.sendRequest])
        XCTAssertEqual(x.phase, .forwarding)
        XCTAssertEqual(x.call?.attempts, 1)
    }

    func testATokenFailureIsRefusedKeepingTheConnectionWhenTheBodyWasConsumed() {
        var x = exchange(in: .awaitingToken)
        let refused = ProxyFailure.providerUnavailable("down")
        XCTAssertEqual(x.refuse(refused, bodyConsumed: true), [.refuse(refused, keepAlive: true)])
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
    }

    func testARefusalForAClientThatAskedToCloseCloses() {
        var x = exchange(in: .awaitingToken, keepAlive: false)
        XCTAssertEqual(x.refuse(failure, bodyConsumed: true), [.refuse(failure, keepAlive: false)])
        XCTAssertEqual(x.phase, .closingAfterFlush)
    }

    func testIllegalEventsWhileAwaitingChangeNothing() {
        var token = exchange(in: .awaitingToken)
        let tokenBefore = token
        XCTAssertEqual(token.upstreamReady(), [])
        XCTAssertEqual(token.responseHead(status: 200), [])
        XCTAssertEqual(token.responseEnded(), [])
        XCTAssertEqual(token.bodyRead(), [])
        XCTAssertEqual(token, tokenBefore)

        var upstream = exchange(in: .awaitingUpstream)
        let upstreamBefore = upstream
        XCTAssertEqual(upstream.tokenReady(), [])
        XCTAssertEqual(upstream.requestSent(), [])
        XCTAssertEqual(upstream.responseFailed(failure, retryable: true), [])
        XCTAssertEqual(upstream, upstreamBefore)
    }

    // MARK: forwarding

    func testACallEndsWhenBothRequestAndAnswerAreDoneInEitherOrder() {
        var x = exchange(in: .forwarding)
        XCTAssertEqual(x.responseHead(status: 200), [.relayResponse])
        XCTAssertEqual(x.responseEnded(), [])
        XCTAssertEqual(x.requestSent(), [.finishCall(keepAlive: true)])
        XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        XCTAssertNil(x.call)

        var y = exchange(in: .sent)
        XCTAssertEqual(y.responseHead(status: 200), [.relayResponse])
        XCTAssertEqual(y.responseEnded(), [.finishCall(keepAlive: true)])
    }

    func testAnAnswerThatMustCloseEndsTheCallWithAClose() {
        var x = exchange(in: .relaying)
        x.closeAfterAnswer()
        XCTAssertEqual(x.responseEnded(), [.finishCall(keepAlive: false)])
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertEqual(x.outputFlushed(), [.close(reason: "answered, not keep-alive")])
        XCTAssertEqual(x.phase, .closed)
    }

    func testA401ToAHeldRequestIsRetriedOnceWithAFreshToken() {
        var x = exchange(in: .sent)
        XCTAssertEqual(x.responseHead(status: 401), [])
        XCTAssertEqual(x.phase, .retrying)
        XCTAssertEqual(x.responseEnded(), [.refetchToken])
        XCTAssertEqual(x.phase, .awaitingToken)
        XCTAssertEqual(x.tokenReady(), [.acquireUpstream])
        XCTAssertEqual(x.upstreamReady(), [.sendRequest])
        XCTAssertEqual(x.call?.attempts, 2)
        XCTAssertEqual(x.requestSent(), [])
        // The second 401 is relayed.
        XCTAssertEqual(x.responseHead(status: 401), [.relayResponse])
    }

    func testA401ToAStreamedRequestIsRelayed() {
        var x = exchange(in: .forwarding)
        XCTAssertEqual(x.responseHead(status: 401), [.relayResponse])
    }

    func testTheKeepAliveRaceResendsAHeldIdempotentRequestOnce() {
        var x = exchange(in: .sent, method: "PUT")
        XCTAssertEqual(x.responseFailed(failure, retryable: true), [.acquireUpstream])
        XCTAssertEqual(x.phase, .awaitingUpstream)
        XCTAssertEqual(x.upstreamReady(), [.sendRequest])
        XCTAssertEqual(x.requestSent(), [])
        XCTAssertEqual(x.responseFailed(failure, retryable: true), [.refuse(failure, keepAlive: true)])
    }

    func testTheKeepAliveRaceNeverResendsAPostOrPatch() {
        for method in ["POST", "PATCH"] {
            var x = exchange(in: .sent, method: method)
            XCTAssertEqual(x.responseFailed(failure, retryable: true), [.refuse(failure, keepAlive: true)], method)
            XCTAssertEqual(x.phase, .readingHead(deadline: nil))
        }
    }

    func testAFailureThatIsNotTheRaceIsRefused() {
        var x = exchange(in: .sent)
        XCTAssertEqual(x.responseFailed(failure, retryable: false), [.refuse(failure, keepAlive: true)])
        var streamed = exchange(in: .forwarding)
        XCTAssertEqual(streamed.responseFailed(failure, retryable: true), [.refuse(failure, keepAlive: false)],
                       "not held: not resent, and its body is cut")
    }

    func testAFailureMidAnswerClosesAfterWhatWasRelayed() {
        var x = exchange(in: .relaying)
        XCTAssertEqual(x.responseFailed(failure, retryable: false), [.closeAfterFlush])
        XCTAssertEqual(x.phase, .closingAfterFlush)
        XCTAssertNil(x.call)
    }

    func testAFailureWhileRetryingAfter401IsRefused() {
        var x = exchange(in: .retrying)
        XCTAssertEqual(x.responseFailed(failure, retryable: true), [.refuse(failure, keepAlive: true)])
    }

    func testIllegalEventsWhileForwardingChangeNothing() {
        var x = exchange(in: .relaying)
        let before = x
        XCTAssertEqual(x.headParsed(method: "GET", keepAlive: true, chunked: false), [])
        XCTAssertEqual(x.tokenReady(), [])
        XCTAssertEqual(x.upstreamReady(), [])
        XCTAssertEqual(x.bodyRead(), [])
        XCTAssertEqual(x.outputFlushed(), [])
        XCTAssertEqual(x.headDeadlinePassed(now: t0 + 100, buffered: 1), [])
        XCTAssertEqual(x, before)
    }

    // MARK: draining, closing

    func testDrainClosesAnIdleConnectionAndEndsABusyOneAfterItsCall() {
        var idle = exchange(in: .readingHead)
        XCTAssertEqual(idle.drain(buffered: 0), [.close(reason: "draining")])
        XCTAssertEqual(idle.phase, .closed)

        var busy = exchange(in: .relaying)
        XCTAssertEqual(busy.drain(buffered: 0), [])
        XCTAssertEqual(busy.responseEnded(), [.finishCall(keepAlive: false)])
        XCTAssertEqual(busy.phase, .closingAfterFlush)

        var pending = exchange(in: .readingHead)
        XCTAssertEqual(pending.drain(buffered: 3), [], "a head already arriving is served")
        XCTAssertEqual(pending.headParsed(method: "GET", keepAlive: true, chunked: false), [.lookUpToken])
        XCTAssertEqual(pending.call?.keepAlive, false)
    }

    func testNothingHappensOnceClosingOrClosed() {
        for start in [Start.closingAfterFlush, .closed] {
            var x = exchange(in: start)
            let before = x
            XCTAssertEqual(x.headParsed(method: "GET", keepAlive: true, chunked: false), [])
            XCTAssertEqual(x.tokenReady(), [])
            XCTAssertEqual(x.responseEnded(), [])
            XCTAssertEqual(x.refuse(failure, bodyConsumed: true), [])
            XCTAssertEqual(x.headDeadlinePassed(now: t0 + 100, buffered: 1), [])
            XCTAssertEqual(x.bytesArrived(now: t0 + 100), [])
            XCTAssertEqual(x, before)
        }
        var closed = exchange(in: .closed)
        XCTAssertEqual(closed.outputFlushed(), [])
    }
}
