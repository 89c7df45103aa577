import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/2 connection lifecycle: active → draining → closed.
final class H2ConnectionLifecycleTests: XCTestCase {
    func testActiveAcceptsStreams() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.streamOpened(1), [.accept])
        XCTAssertEqual(lifecycle.streamOpened(3), [.accept])
        XCTAssertEqual(lifecycle.openStreams, 2)
        XCTAssertEqual(lifecycle.streamClosed(), [])
        XCTAssertEqual(lifecycle.state, .active)
    }

    func testDrainWithOpenStreamsSendsGoAwayAndWaits() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.streamOpened(3)
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 3), [.sendGoAway(lastStreamID: 3)])
        XCTAssertEqual(lifecycle.state, .draining(lastStreamID: 3))
        XCTAssertEqual(lifecycle.streamClosed(), [])
        XCTAssertEqual(lifecycle.streamClosed(), [.close])
    }

    func testDrainWithNoStreamsClosesAfterTheGoAway() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 0), [.sendGoAway(lastStreamID: 0), .close])
    }

    func testWhileDrainingStreamsPastTheLastAreRefused() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 1)
        XCTAssertEqual(lifecycle.streamOpened(5), [.refuse])
        XCTAssertEqual(lifecycle.openStreams, 1)
        XCTAssertEqual(lifecycle.streamClosed(), [.close])
    }

    func testWhileDrainingAStreamUpToTheLastIsTaken() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 3)
        XCTAssertEqual(lifecycle.streamOpened(3), [.accept])
    }

    func testASecondDrainOrPeerGoAwayDoesNothing() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        _ = lifecycle.drain(lastProcessedStreamID: 1)
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 7), [])
        XCTAssertEqual(lifecycle.peerGoAway(), [])
        XCTAssertEqual(lifecycle.state, .draining(lastStreamID: 1))
    }

    func testPeerGoAwayClosesOnceItsStreamsAreDone() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.streamOpened(1)
        XCTAssertEqual(lifecycle.peerGoAway(), [])
        XCTAssertTrue(lifecycle.isDraining)
        XCTAssertEqual(lifecycle.streamClosed(), [.close])
    }

    func testPeerGoAwayWithNoStreamsClosesAtOnce() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.peerGoAway(), [.close])
    }

    func testSessionEndClosesFromAnyStateOnce() {
        var active = H2ConnectionLifecycle()
        _ = active.streamOpened(1)
        XCTAssertEqual(active.sessionEnded(), [.close])
        XCTAssertEqual(active.state, .closed)
        XCTAssertEqual(active.openStreams, 0)
        XCTAssertEqual(active.sessionEnded(), [])

        var draining = H2ConnectionLifecycle()
        _ = draining.streamOpened(1)
        _ = draining.drain(lastProcessedStreamID: 1)
        XCTAssertEqual(draining.sessionEnded(), [.close])
    }

    func testClosedRefusesAndIgnores() {
        var lifecycle = H2ConnectionLifecycle()
        _ = lifecycle.sessionEnded()
        XCTAssertEqual(lifecycle.streamOpened(1), [.refuse])
        XCTAssertEqual(lifecycle.streamClosed(), [])
        XCTAssertEqual(lifecycle.drain(lastProcessedStreamID: 1), [])
        XCTAssertEqual(lifecycle.peerGoAway(), [])
        XCTAssertEqual(lifecycle.state, .closed)
    }

    func testAStrayStreamCloseDoesNotGoNegative() {
        var lifecycle = H2ConnectionLifecycle()
        XCTAssertEqual(lifecycle.streamClosed(), [])
        XCTAssertEqual(lifecycle.openStreams, 0)
    }
}
