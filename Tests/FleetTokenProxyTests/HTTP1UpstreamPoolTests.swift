import Logging
import XCTest
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#endif

/// The pool's queue of borrowers, against a loopback listener that never accepts (the kernel
/// completes the handshakes, so dials succeed and no answer ever comes).
final class HTTP1UpstreamPoolTests: XCTestCase {
    private var loop: EventLoop!
    private var listenFD: Int32 = -1
    private var origin: Origin!

    override func setUpWithError() throws {
        loop = try EventLoop()
        listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = listenFD
        let rc = withUnsafeMutablePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0, listen(fd, 64) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        XCTAssertEqual(rc, 0)
        origin = Origin(scheme: .http, host: "127.0.0.1", port: UInt16(bigEndian: sin.sin_port), hostHeader: "test")
    }

    override func tearDown() {
        close(listenFD)
        loop = nil
    }

    private func pool(maxConnections: Int = 1) -> HTTP1UpstreamPool {
        HTTP1UpstreamPool(loop: loop, origin: origin, tls: nil, maxConnections: maxConnections, logger: Logger(label: "test"))
    }

    /// Runs the loop until `done` or `timeout` passed.
    private func run(timeout: Double = 1, until done: @escaping () -> Bool) {
        func check() {
            if done() { loop.stop() } else { loop.schedule(after: 0.01) { check() } }
        }
        loop.schedule(after: 0) { check() }
        loop.schedule(after: timeout) { [loop] in loop!.stop() }
        loop.run()
    }

    /// One connection, borrowed.
    private func borrowed(from pool: HTTP1UpstreamPool) -> HTTP1UpstreamConnection? {
        var connection: HTTP1UpstreamConnection?
        pool.acquire { if case .success(let c) = $0 { connection = c } }
        run { connection != nil }
        return connection
    }

    func testWaitersAreBoundedAndThoseOverTheBoundFailAtOnce() {
        let pool = pool()
        var failures = 0
        for _ in 0..<(HTTP1UpstreamPool.defaultMaxWaiters + 77) {
            pool.acquire { if case .failure = $0 { failures += 1 } }
        }
        // The first dials; the next `defaultMaxWaiters` wait; the rest are refused.
        XCTAssertEqual(pool.waiting, HTTP1UpstreamPool.defaultMaxWaiters)
        XCTAssertEqual(failures, 76)
        pool.close()
    }

    func testCancelledWaitersAreNeverCalledAndReleaseSkipsThem() throws {
        let pool = pool()
        let connection = try XCTUnwrap(borrowed(from: pool))
        var deadCalls = 0
        let tickets = (0..<100).map { _ in pool.acquire { _ in deadCalls += 1 } }
        XCTAssertEqual(pool.waiting, 100)
        tickets.forEach { $0.cancel() }
        tickets.forEach { $0.cancel() } // idempotent
        XCTAssertEqual(pool.waiting, 0)
        var live: HTTP1UpstreamConnection?
        let liveTicket = pool.acquire { if case .success(let c) = $0 { live = c } }
        XCTAssertTrue(liveTicket.isPending)
        pool.release(connection, reusable: true)
        XCTAssertTrue(live === connection, "the live waiter behind the dead ones gets the connection")
        XCTAssertEqual(deadCalls, 0)
        XCTAssertFalse(liveTicket.isPending)
        XCTAssertEqual(pool.waiting, 0)
        pool.close()
    }

    func testAFloodOfCallersThatGiveUpDoesNotGrowTheQueue() throws {
        final class Weak { weak var ticket: PoolTicket? }
        let pool = pool()
        _ = try XCTUnwrap(borrowed(from: pool))
        var kept: [Weak] = []
        kept.reserveCapacity(100_000)
        for _ in 0..<100_000 {
            let ticket = pool.acquire { _ in XCTFail("cancelled waiter called") }
            ticket.cancel()
            let reference = Weak()
            reference.ticket = ticket
            kept.append(reference)
        }
        XCTAssertEqual(pool.waiting, 0)
        // Only the queue holds a cancelled ticket: the ones still alive are the ones it keeps.
        XCTAssertLessThanOrEqual(kept.filter { $0.ticket != nil }.count, 65)
        var refused = false
        pool.acquire { if case .failure = $0 { refused = true } }
        XCTAssertFalse(refused, "cancelled waiters do not count against the bound")
        pool.close()
    }

    func testAConnectionDialedForACancelledTicketGoesToTheIdleList() {
        let pool = pool()
        var called = false
        let ticket = pool.acquire { _ in called = true }
        ticket.cancel()
        XCTAssertEqual(pool.totalConnections, 1)
        var next: HTTP1UpstreamConnection?
        run(timeout: 0.2) { false } // the dial completes meanwhile
        XCTAssertFalse(called)
        // The dial finished meanwhile; the connection is idle and handed out at once.
        pool.acquire { if case .success(let c) = $0 { next = c } }
        XCTAssertNotNil(next)
        pool.close()
    }

    func testCloseFailsLiveWaitersOnly() throws {
        let pool = pool()
        _ = try XCTUnwrap(borrowed(from: pool))
        var results: [Bool] = []
        let dead = pool.acquire { _ in results.append(false) }
        pool.acquire { if case .failure = $0 { results.append(true) } }
        dead.cancel()
        pool.close()
        XCTAssertEqual(results, [true])
    }
}
