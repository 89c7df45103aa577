import XCTest
@testable import FleetTokenProxy

/// The answer deadline's sweep decision (`H2UpstreamStream.answerStalled`), with sweep times
/// passed in; how an exchange ends when its connection goes (`endOnLostConnection`).
final class H2UpstreamStreamTests: XCTestCase {
    func testAnAnswerThatNeverStartsStallsAFullTimeoutAfterTheFirstSweepSawIt() {
        let stream = H2UpstreamStream(delegate: SilentCall())
        XCTAssertFalse(stream.answerStalled(now: 100, timeout: 60, bound: 1000), "first seen")
        XCTAssertFalse(stream.answerStalled(now: 159, timeout: 60, bound: 1000))
        XCTAssertTrue(stream.answerStalled(now: 160, timeout: 60, bound: 1000))
    }

    func testAnAnswerThatMovesIsNotStalledAndItsClockRestarts() {
        let stream = H2UpstreamStream(delegate: SilentCall())
        _ = stream.answerStalled(now: 0, timeout: 60, bound: 1000)
        stream.headerBlockReceived()
        XCTAssertFalse(stream.answerStalled(now: 50, timeout: 60, bound: 1000))
        stream.received(count: 10)
        stream.responseTaken(count: 10)
        XCTAssertFalse(stream.answerStalled(now: 100, timeout: 60, bound: 1000))
        XCTAssertFalse(stream.answerStalled(now: 159, timeout: 60, bound: 1000))
        XCTAssertTrue(stream.answerStalled(now: 160, timeout: 60, bound: 1000), "then nothing for 60 s")
    }

    func testAnAnswerWaitingForItsClientOrEndedIsNeverTheUpstreamsStall() {
        let slowClient = H2UpstreamStream(delegate: SilentCall())
        slowClient.received(count: 1000)
        XCTAssertFalse(slowClient.answerStalled(now: 0, timeout: 60, bound: 1000))
        XCTAssertFalse(slowClient.answerStalled(now: 500, timeout: 60, bound: 1000), "the client has not taken a bound's worth")
        let ended = H2UpstreamStream(delegate: SilentCall())
        ended.answerDidEnd()
        XCTAssertFalse(ended.answerStalled(now: 0, timeout: 60, bound: 1000))
        XCTAssertFalse(ended.answerStalled(now: 500, timeout: 60, bound: 1000))
    }

    /// Fleet Engine cannot have acted on a request that never left (still waiting for a
    /// connection, or its HEADERS still in nghttp2): sent again under the replay rule, whatever
    /// its method.
    func testAnExchangeWhoseRequestNeverLeftEndsUnprocessed() {
        let waiting = H2UpstreamStream(delegate: SilentCall())
        guard case .unprocessed = waiting.endOnLostConnection(.upstreamUnavailable("gone"), peerLastStreamID: nil) else {
            return XCTFail("a queued exchange was never sent")
        }
        XCTAssertFalse(H2UpstreamStream.mayHaveBeenProcessed(headSent: false, stream: 1, peerLastStreamID: nil))
    }

    func testAStreamAboveThePeersLastStreamWasNotProcessedAndOneAtOrBelowItMayHaveBeen() {
        XCTAssertFalse(H2UpstreamStream.mayHaveBeenProcessed(headSent: true, stream: 5, peerLastStreamID: 3))
        XCTAssertTrue(H2UpstreamStream.mayHaveBeenProcessed(headSent: true, stream: 3, peerLastStreamID: 3))
        XCTAssertTrue(H2UpstreamStream.mayHaveBeenProcessed(headSent: true, stream: 5, peerLastStreamID: nil), "no GOAWAY named a stream")
    }
}
