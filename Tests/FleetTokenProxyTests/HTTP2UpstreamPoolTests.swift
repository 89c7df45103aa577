import Logging
import XCTest
@testable import FleetTokenProxy

/// The HTTP/2 pool's idle bound and start-up dial, against an h2c upstream that connects and
/// never says a word (`BacklogListener`).
final class HTTP2UpstreamPoolTests: XCTestCase {
    private var loop: EventLoop!
    private var listener: BacklogListener!

    override func setUpWithError() throws {
        loop = try EventLoop()
        listener = try XCTUnwrap(BacklogListener())
    }

    override func tearDown() {
        listener = nil
        loop = nil
    }

    func testAnIdleConnectionOutlivesTheConnectTimeoutAndClosesAtTheIdleTimeout() {
        let pool = HTTP2UpstreamPool(loop: loop, origin: listener.origin, tls: nil, connectTimeout: 0.2, idleTimeout: 0.9,
                                     logger: Logger(label: "test"))
        pool.warmUp()
        pool.warmUp()
        XCTAssertEqual(pool.connectionCount, 1, "one warm connection")
        let opened = ContinuousClock.now
        loop.run(timeout: 0.6) { false }
        XCTAssertEqual(pool.connectionCount, 1, "idle three connect timeouts long, still open")
        loop.run(timeout: 2) { pool.connectionCount == 0 }
        XCTAssertEqual(pool.connectionCount, 0, "closed once idle for the idle timeout")
        let idled = ContinuousClock.now - opened
        XCTAssertGreaterThan(idled, .milliseconds(800))
        XCTAssertLessThan(idled, .milliseconds(1300))
        pool.close()
    }
}
