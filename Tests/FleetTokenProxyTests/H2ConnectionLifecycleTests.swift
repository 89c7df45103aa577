import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/2 connection lifecycle: active → draining → closing → closed.
final class H2ConnectionLifecycleTests: XCTestCase {
    func testActiveAcceptsStreams() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.streamOpened(1), .accept)
        XCTAssertEqual(lifecycle.streamOpened(3), .accept)
        XCTAssertEqual(lifecycle.openStreams, 2)
        XCTAssertNil(lifecycle.streamClosed())
        XCTAssertEqual(lifecycle.state, .active(openStreams: 1))
        XCTAssertFalse(lifecycle.closesWhenWritten)
        XCTAssertFalse(lifecycle.isClosed)
    }

    func testDrainWithOpenStreamsSendsGoAwayAndWaits() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.streamOpened(3)
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 3), .sendGoAway(lastStreamID: 3, close: false))
        XCTAssertEqual(lifecycle.state, .draining(lastStreamID: 3, openStreams: 2))
        XCTAssertNil(lifecycle.streamClosed())
        XCTAssertFalse(lifecycle.closesWhenWritten)
        XCTAssertEqual(lifecycle.streamClosed(), .closeWhenWritten)
        XCTAssertTrue(lifecycle.closesWhenWritten)
    }

    func testDrainWithNoStreamsClosesAfterTheGoAway() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 0), .sendGoAway(lastStreamID: 0, close: true))
        XCTAssertTrue(lifecycle.closesWhenWritten)
    }

    func testANegativeLastStreamIsSentAsZero() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: -1), .sendGoAway(lastStreamID: 0, close: true))
    }

    func testWhileDrainingStreamsPastTheLastAreRefused() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 1)
        XCTAssertEqual(lifecycle.streamOpened(5), .refuse)
        XCTAssertEqual(lifecycle.openStreams, 1)
        XCTAssertEqual(lifecycle.streamClosed(), .closeWhenWritten)
    }

    func testWhileDrainingAStreamUpToTheLastIsTaken() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 3)
        XCTAssertEqual(lifecycle.streamOpened(3), .accept)
        XCTAssertEqual(lifecycle.openStreams, 2)
    }

    func testASecondDrainOrPeerGoAwayDoesNothing() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 1)
        XCTAssertNil(lifecycle.drain(lastProcessedStreamID: 7))
        XCTAssertNil(lifecycle.peerGoAway())
        XCTAssertEqual(lifecycle.state, .draining(lastStreamID: 1, openStreams: 1))
    }

    func testPeerGoAwayClosesOnceItsStreamsAreDone() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        XCTAssertNil(lifecycle.peerGoAway())
        XCTAssertEqual(lifecycle.state, .draining(lastStreamID: .max, openStreams: 1))
        XCTAssertEqual(lifecycle.streamClosed(), .closeWhenWritten)
    }

    func testPeerGoAwayWithNoStreamsClosesAtOnce() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.peerGoAway(), .closeWhenWritten)
        XCTAssertEqual(lifecycle.state, .closing)
    }

    func testSessionEndClosesFromAnyStateOnce() {
        var active = H2ConnectionLifecycle()
        _ = active.streamOpened(1)
        XCTAssertEqual(active.sessionEnded(), .close)
        XCTAssertEqual(active.state, .closed)
        XCTAssertTrue(active.isClosed)
        XCTAssertEqual(active.openStreams, 0)
        XCTAssertNil(active.sessionEnded())

        var draining = H2ConnectionLifecycle()
        _ = draining.streamOpened(1)
        _ = draining.drain(lastProcessedStreamID: 1)
        XCTAssertEqual(draining.sessionEnded(), .close)

        var closing = H2ConnectionLifecycle()
        _ = closing.peerGoAway()
        XCTAssertEqual(closing.sessionEnded(), .close)
        XCTAssertFalse(closing.closesWhenWritten)
    }

    func testClosingAndClosedRefuseStreamsAndIgnoreTheRest() {
        var closing = H2ConnectionLifecycle()
        _ = closing.peerGoAway()
        var closed = H2ConnectionLifecycle()
        _ = closed.sessionEnded()
        for (start, state) in [(closing, H2ConnectionLifecycle.State.closing), (closed, .closed)] {
            var lifecycle = start
            XCTAssertEqual(lifecycle.streamOpened(1), .refuse, "\(state)")
            XCTAssertNil(lifecycle.streamClosed())
            XCTAssertNil(lifecycle.drain(lastProcessedStreamID: 1))
            XCTAssertNil(lifecycle.peerGoAway())
            XCTAssertEqual(lifecycle.state, state)
        }
    }

    func testAStrayStreamCloseDoesNotGoNegative() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertNil(lifecycle.streamClosed())
        XCTAssertEqual(lifecycle.openStreams, 0)
    }

    /// This side's connection error (or a session with nothing left to say): the GOAWAY is
    /// written, then the connection closes; the streams go with it, none is taken.
    func testASessionOverByThisSidesErrorClosesOnceTheGoAwayIsWritten() {
        for cause in [H2SessionEnd.Cause.localError(code: 1), .finished] {
            var lifecycle = H2ConnectionLifecycle()
            _ = lifecycle.streamOpened(1)
            XCTAssertEqual(lifecycle.sessionOver(cause), .closeWhenWritten, "\(cause)")
            XCTAssertTrue(lifecycle.closesWhenWritten)
            XCTAssertEqual(lifecycle.streamOpened(3), .refuse)
            XCTAssertNil(lifecycle.sessionOver(cause), "once")
            XCTAssertEqual(lifecycle.sessionEnded(), .close)
        }
    }

    /// The client's connection error (its GOAWAY with an error) or a fatal failure: nothing more
    /// will be read, the connection closes at once, even while draining or closing.
    func testASessionOverByThePeersErrorOrAFailureClosesAtOnce() {
        for cause in [H2SessionEnd.Cause.peerError(code: 2), .fatal(libraryCode: -904)] {
            var draining = H2ConnectionLifecycle()
            _ = draining.streamOpened(1)
            _ = draining.drain(lastProcessedStreamID: 1)
            XCTAssertEqual(draining.sessionOver(cause), .closeNow, "\(cause)")
            XCTAssertEqual(draining.sessionOver(cause), .closeNow, "closing: still at once")
            XCTAssertEqual(draining.sessionEnded(), .close)
            XCTAssertNil(draining.sessionOver(cause), "closed: nothing")
        }
    }
}
