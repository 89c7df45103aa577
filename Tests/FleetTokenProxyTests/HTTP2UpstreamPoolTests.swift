import Logging
import XCTest
@testable import FleetTokenProxy

/// The HTTP/2 pool's idle bound, start-up dial and PING keepalive, against an h2c upstream that
/// connects and says nothing, or answers only SETTINGS and PINGs (`BacklogListener`).
final class HTTP2UpstreamPoolTests: BacklogListenerTestCase {
    func testAnIdleConnectionOutlivesTheConnectTimeoutAndClosesAtTheIdleTimeout() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 0.2, idleTimeout: 0.9,
                                     logger: Logger(label: "test"))
        // Dialed by a call (the pool was never warmed), idle once the call gives up.
        let call = SilentCall()
        let exchange = pool.start(call)
        loop.run(timeout: 1) { pool.readyConnectionCount == 1 }
        exchange.cancel(.abandoned)
        loop.expectIdleCloseAtPointNine { pool.connectionCount }
        pool.close()
    }

    func testAStreamNobodyAnswersIsResetAtTheAnswerDeadlineAndItsCallFails() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     answerTimeout: 0.3, logger: Logger(label: "test"))
        let call = SilentCall()
        let start = ContinuousClock.now
        _ = pool.start(call)
        loop.run(timeout: 2) { call.ended != nil }
        let waited = ContinuousClock.now - start
        guard case .failed(let failure)? = call.ended else { return XCTFail("ended: \(String(describing: call.ended))") }
        XCTAssertEqual(failure.httpStatus, 502)
        XCTAssertEqual(failure.grpcStatus, 14)
        XCTAssertTrue(failure.message.contains("did not answer"), failure.message)
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(300), "never early")
        XCTAssertLessThan(waited, .milliseconds(700))
        XCTAssertEqual(pool.readyConnectionCount, 1, "the connection stays for other calls")
        pool.close()
    }

    func testCallsWaitingForAStreamSlotAreBoundedAndThoseOverTheBoundFailAtOnce() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, maxConnections: 1, connectTimeout: 1,
                                     idleTimeout: 10, maxWaiters: 3, logger: Logger(label: "test"))
        let slots = HTTP2UpstreamConnection.maxStreams
        let open = (0..<slots).map { _ in SilentCall() }
        for call in open { _ = pool.start(call) }
        loop.run(timeout: 1) { pool.readyConnectionCount == 1 }
        let queued = (0..<3).map { _ in SilentCall() }
        let exchanges = queued.map { pool.start($0) }
        XCTAssertTrue((open + queued).allSatisfy { $0.ended == nil }, "a full connection's streams, and three waiting")
        let over = SilentCall()
        _ = pool.start(over)
        guard case .failed(let failure)? = over.ended else { return XCTFail("the fourth waiter was not refused") }
        XCTAssertEqual(failure.httpStatus, 502)
        XCTAssertEqual(failure.grpcStatus, 14)
        XCTAssertTrue(failure.message.contains("3 calls already wait"), failure.message)
        // A waiter that gives up frees its place.
        exchanges[0].cancel(.abandoned)
        let next = SilentCall()
        _ = pool.start(next)
        XCTAssertNil(next.ended, "queued in the freed place")
        pool.close()
        XCTAssertTrue(queued[1...].allSatisfy { $0.ended != nil } && next.ended != nil, "waiters fail on close")
    }

    func testAWarmPoolReplacesItsLastIdleConnectionBeforeClosingIt() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 0.5,
                                     logger: Logger(label: "test"))
        pool.warmUp()
        pool.warmUp()
        XCTAssertEqual(pool.connectionCount, 1, "one warm connection")
        loop.run(timeout: 1) { pool.readyConnectionCount == 1 }
        XCTAssertEqual(loop.fewest(over: 1.8) { pool.readyConnectionCount }, 1, "a ready connection at every moment")
        XCTAssertGreaterThanOrEqual(pool.connectionsOpened, 3, "replaced at each idle bound")
        XCTAssertLessThanOrEqual(pool.connectionsOpened, 4)
        XCTAssertEqual(pool.connectionCount, 1, "the idle ones it replaced closed")
        pool.close()
    }

    func testAWarmPoolReplacesALastConnectionTheServerDropped() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     logger: Logger(label: "test"))
        pool.warmUp()
        loop.run(timeout: 1.1) { false }
        XCTAssertEqual(pool.readyConnectionCount, 1)
        // Closing the listener resets the connection it never accepted.
        listener = nil
        loop.run(timeout: 2) { pool.connectionsOpened == 2 }
        XCTAssertEqual(pool.connectionsOpened, 2, "a replacement was dialed without a call")
        pool.close()
    }

    func testAConnectionDroppedYoungIsNotReplaced() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 1, idleTimeout: 10,
                                     logger: Logger(label: "test"))
        pool.warmUp()
        loop.run(timeout: 1) { pool.readyConnectionCount == 1 }
        listener = nil
        loop.run(timeout: 1) { pool.connectionCount == 0 }
        XCTAssertEqual(pool.connectionCount, 0)
        XCTAssertEqual(pool.connectionsOpened, 1, "no dialing loop against a server that drops every new connection")
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

/// The client half of a GET that nobody answers: records how its upstream exchange ended.
final class SilentCall: UpstreamExchangeDelegate {
    let requestMethod = "GET"
    let requestPath = "/v1/providers/p/vehicles/v"
    let requestToken = "t"
    let requestHasBody = false
    let http1Refusal: ProxyFailure? = nil
    let requestDeclaredLength: Int? = nil
    private(set) var ended: UpstreamEnd?

    func appendRequestFields(to list: inout H2HeaderList) {}
    func writeRequestHead(host: String, framing: H1MessageTranslation.RequestFraming, to out: inout HeadWriter) {}
    func pullRequestBody(upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull { .bytes(0, end: true) }
    func upstreamHeaderBlock(_ head: AnswerHead, endStream: Bool) {}
    func upstreamData(_ bytes: ByteView) {}
    func upstreamDataEnded() {}
    func upstreamClosed(_ end: UpstreamEnd) { ended = end }
}
