import XCTest
@testable import FleetTokenProxy

/// The upstream HTTP/2 keepalive against a fake clock: PING while idle at most every interval,
/// a PING unanswered finds the path dead, ENHANCE_YOUR_CALM backs off, idle connections close.
final class H2KeepaliveTests: XCTestCase {
    private func keepalive(interval: Double = 300, ackTimeout: Double = 20, idle: Double = 600) -> H2Keepalive {
        H2Keepalive(now: 1000, pingInterval: interval, ackTimeout: ackTimeout, idleTimeout: idle)
    }

    func testAnIdleConnectionPingsNoMoreOftenThanTheInterval() {
        var k = keepalive(idle: 10_000)
        XCTAssertNil(k.tick(now: 1010, idle: true))
        XCTAssertNil(k.tick(now: 1299, idle: true))
        XCTAssertEqual(k.tick(now: 1300, idle: true), .sendPing)
        XCTAssertNil(k.tick(now: 1301, idle: true), "one PING out at a time")
        XCTAssertEqual(k.pingAcked(now: 1300.02), .roundTrip(seconds: 1300.02 - 1300))
        XCTAssertNil(k.tick(now: 1310, idle: true), "the next one waits a whole interval")
        XCTAssertNil(k.tick(now: 1599, idle: true))
        XCTAssertEqual(k.tick(now: 1600, idle: true), .sendPing)
    }

    func testABusyConnectionDoesNotPing() {
        var k = keepalive(interval: 10)
        XCTAssertNil(k.tick(now: 1020, idle: false))
        XCTAssertNil(k.tick(now: 1040, idle: false))
        XCTAssertEqual(k.tick(now: 1041, idle: true), .sendPing)
    }

    func testAnUnansweredPingFindsThePathDead() {
        var k = keepalive()
        XCTAssertEqual(k.tick(now: 1300, idle: true), .sendPing)
        XCTAssertNil(k.tick(now: 1319, idle: true))
        XCTAssertEqual(k.tick(now: 1320, idle: true), .pathDead)
        XCTAssertEqual(k.tick(now: 1320, idle: false), .pathDead, "a call started meanwhile does not revive it")
    }

    func testAnAckWithoutAPingOutIsIgnored() {
        var k = keepalive()
        XCTAssertNil(k.pingAcked(now: 1001))
    }

    func testAConnectionIdleFromTheStartClosesAtTheIdleTimeout() {
        var k = keepalive(interval: 10_000, idle: 600)
        XCTAssertNil(k.tick(now: 1599, idle: true))
        XCTAssertEqual(k.tick(now: 1600, idle: true), .closeIdle)
    }

    func testIdleForTheIdleTimeoutCloses() {
        var k = keepalive(idle: 600)
        XCTAssertNil(k.tick(now: 1100, idle: false))
        XCTAssertNil(k.tick(now: 1200, idle: true), "idle from here")
        XCTAssertEqual(k.tick(now: 1500, idle: true), .sendPing)
        _ = k.pingAcked(now: 1500)
        XCTAssertNil(k.tick(now: 1600, idle: false), "a call resets the idle clock")
        XCTAssertNil(k.tick(now: 1700, idle: true))
        XCTAssertEqual(k.tick(now: 2299, idle: true), .sendPing)
        XCTAssertEqual(k.tick(now: 2300, idle: true), .closeIdle)
    }

    /// `--upstream-idle-timeout 5`: ticks every 2.5 s, not at the 60 s answer bound, so a
    /// connection idle since its last call closes 5 to 7.5 s later.
    func testAnIdleBoundBelowTheAnswerBoundIsHonoured() {
        var k = keepalive(idle: 5)
        XCTAssertEqual(k.tickPeriod, 2.5)
        XCTAssertNil(k.tick(now: 1001, idle: false), "a call")
        XCTAssertNil(k.tick(now: 1003.5, idle: true), "idle from here")
        XCTAssertNil(k.tick(now: 1006, idle: true))
        XCTAssertEqual(k.tick(now: 1008.5, idle: true), .closeIdle)
    }

    func testEnhanceYourCalmDoublesTheIntervalUpToTheBound() {
        var k = keepalive(interval: 300)
        XCTAssertEqual(k.goAway(errorCode: H2Keepalive.enhanceYourCalm, now: 1100), .replace(pingInterval: 600))
        XCTAssertEqual(k.goAway(errorCode: H2Keepalive.enhanceYourCalm, now: 1100), .replace(pingInterval: 1200))
        XCTAssertEqual(k.goAway(errorCode: H2Keepalive.enhanceYourCalm, now: 1100), .replace(pingInterval: 2400))
        XCTAssertEqual(k.goAway(errorCode: H2Keepalive.enhanceYourCalm, now: 1100), .replace(pingInterval: H2Keepalive.maxPingInterval))
        XCTAssertEqual(k.goAway(errorCode: 0, now: 1100), .replace(pingInterval: H2Keepalive.maxPingInterval))
    }

    func testAGoAwayOnAYoungConnectionIsNotReplacedAtOnce() {
        var k = keepalive()
        XCTAssertEqual(k.goAway(errorCode: 0, now: 1000.5), .wait(pingInterval: 300))
        XCTAssertEqual(k.goAway(errorCode: 0, now: 1001), .replace(pingInterval: 300))
    }

    func testTheTickIsFineEnoughForTheShortestBound() {
        XCTAssertEqual(keepalive(interval: 300, ackTimeout: 20, idle: 600).tickPeriod, 10)
        XCTAssertEqual(keepalive(interval: 0.2, ackTimeout: 0.3, idle: 5).tickPeriod, 0.1)
    }
}
