import Logging
import XCTest
@testable import FleetTokenProxy

/// The HTTP/2 pool's idle bound, start-up dial and PING keepalive, against an h2c upstream that
/// connects and says nothing, or answers only SETTINGS and PINGs (`BacklogListener`).
final class HTTP2UpstreamPoolTests: BacklogListenerTestCase {
    func testAnIdleConnectionOutlivesTheConnectTimeoutAndClosesAtTheIdleTimeout() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 0.2, idleTimeout: 0.9,
                                     logger: Logger(label: "test"))
        pool.warmUp()
        pool.warmUp()
        XCTAssertEqual(pool.connectionCount, 1, "one warm connection")
        loop.expectIdleCloseAtPointNine { pool.connectionCount }
        pool.close()
    }

    func testPingsKeepALivePathAndFindADeadOneWhichIsReplacedBeforeAnyCall() {
        listener.answerPings()
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     pingInterval: 0.2, pingAckTimeout: 0.3, logger: Logger(label: "test"))
        pool.warmUp()
        loop.run(timeout: 0.9) { false }
        XCTAssertGreaterThanOrEqual(pool.pingsSent, 2, "an idle connection PINGs every interval")
        XCTAssertLessThanOrEqual(pool.pingsSent, 4, "and no more often")
        XCTAssertNotNil(pool.lastPingRoundTrip)
        XCTAssertEqual(pool.connectionsOpened, 1, "answered PINGs keep the connection")
        listener.answering.turnOff()
        loop.run(timeout: 2) { pool.connectionsOpened == 2 }
        XCTAssertEqual(pool.connectionsOpened, 2, "an unanswered PING replaced the connection")
        XCTAssertEqual(pool.connectionCount, 1)
        pool.close()
    }

    func testAnUnansweredPingOnASilentUpstreamReplacesTheConnection() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     pingInterval: 0.2, pingAckTimeout: 0.3, logger: Logger(label: "test"))
        pool.warmUp()
        let start = ContinuousClock.now
        loop.run(timeout: 2) { pool.connectionsOpened == 2 }
        XCTAssertEqual(pool.connectionsOpened, 2)
        XCTAssertEqual(pool.pingsSent, 1)
        XCTAssertGreaterThan(ContinuousClock.now - start, .milliseconds(450), "PING at 0.2 s, unanswered at 0.5 s")
        pool.close()
    }

    func testEnhanceYourCalmBacksThePingsOffAndOpensTheReplacementAtOnce() {
        listener.answerPings(calm: true)
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     pingInterval: 1.1, pingAckTimeout: 5, logger: Logger(label: "test"))
        pool.warmUp()
        loop.run(timeout: 3) { pool.connectionsOpened == 2 }
        XCTAssertEqual(pool.pingsSent, 1)
        XCTAssertEqual(pool.pingInterval, 2.2, "the interval doubled for every later connection")
        XCTAssertEqual(pool.connectionsOpened, 2, "the replacement opened before any call needed it")
        pool.close()
    }
}
