import Logging
import XCTest
@testable import FleetTokenProxy

/// When an HTTP/1.1 client connection's next send may reuse its last `H1UpstreamExchange`
/// (`reusable`): only once nothing of the last send holds it, so no report of an old send can
/// reach a new one. Against a loopback listener that accepts no request (`BacklogListener`).
final class H1UpstreamExchangeReuseTests: BacklogListenerTestCase {
    private func pool() -> HTTP1UpstreamPool {
        HTTP1UpstreamPool(loop: loop, origin: listener.origin, tls: nil, maxConnections: 1, logger: Logger(label: "test"))
    }

    private func start(_ call: SilentCall, on pool: HTTP1UpstreamPool) -> H1UpstreamExchange {
        H1UpstreamExchange.start(call, pool: pool, loop: loop, host: "test", highWater: 1 << 18)
    }

    func testAnExchangeWaitingForItsConnectionIsNotReusedUntilCancelled() throws {
        let pool = pool()
        let first = SilentCall()
        var spare: H1UpstreamExchange? = start(first, on: pool)
        XCTAssertEqual(pool.totalConnections, 1, "dialling for it")
        XCTAssertNil(H1UpstreamExchange.reusable(&spare), "the pool's ticket holds it")
        spare?.cancel(.abandoned)
        let reused = try XCTUnwrap(H1UpstreamExchange.reusable(&spare))
        XCTAssertTrue(reused === spare)
        pool.close()
    }

    func testAnExchangeHoldingItsConnectionIsNotReusedUntilCancelled() {
        let pool = pool()
        var spare: H1UpstreamExchange? = start(SilentCall(), on: pool)
        // The dial completes and the request goes; the listener never answers.
        loop.run(timeout: 2) { spare?.requestFullySent == true }
        XCTAssertTrue(spare?.requestFullySent ?? false, "the GET left on the lent connection")
        XCTAssertNil(H1UpstreamExchange.reusable(&spare), "the connection (its sink) holds it")
        spare?.cancel(.abandoned)
        XCTAssertEqual(pool.totalConnections, 0, "a half-used connection is discarded, never pooled")
        XCTAssertNotNil(H1UpstreamExchange.reusable(&spare))
        pool.close()
    }

    func testAnExchangeTheClientHalfStillHoldsIsNotReused() {
        let pool = pool()
        pool.close()
        let call = SilentCall()
        var spare: H1UpstreamExchange? = start(call, on: pool)
        guard case .failed? = call.ended else { return XCTFail("a closed pool fails the exchange at once") }
        do {
            let upstream: UpstreamExchange? = spare
            XCTAssertNil(H1UpstreamExchange.reusable(&spare), "the client half's reference")
            withExtendedLifetime(upstream) {}
        }
        XCTAssertNotNil(H1UpstreamExchange.reusable(&spare), "once only the spare holds it")
    }

    func testARestartReportsToTheNewSendOnly() throws {
        let pool = pool()
        pool.close()
        let first = SilentCall()
        var spare: H1UpstreamExchange? = start(first, on: pool)
        guard case .failed? = first.ended else { return XCTFail("a closed pool fails the exchange at once") }
        let second = SilentCall()
        try XCTUnwrap(H1UpstreamExchange.reusable(&spare)).restart(for: second)
        guard case .failed? = second.ended else { return XCTFail("the restarted exchange reports to its new client half") }
        XCTAssertNotNil(H1UpstreamExchange.reusable(&spare), "over again, reusable again")
    }
}
