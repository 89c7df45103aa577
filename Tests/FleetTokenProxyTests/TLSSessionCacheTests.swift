@testable import FleetTokenProxy
import XCTest

/// The session cache's bounds and ownership, with fake session pointers and a release that
/// counts: every session inserted is released exactly once, never one it did not take.
final class TLSSessionCacheTests: XCTestCase {
    private var released: [Int] = []
    private func session(_ n: Int) -> OpaquePointer { OpaquePointer(bitPattern: 0x1000 + n * 16)! }
    private func number(_ session: OpaquePointer) -> Int { (Int(bitPattern: UnsafeRawPointer(session)) - 0x1000) / 16 }
    private func cache(origins: Int = 2, perOrigin: Int = 3) -> TLSSessionCache {
        TLSSessionCache(originLimit: origins, sessionsPerOrigin: perOrigin) { [unowned self] in released.append(number($0)) }
    }
    private func origin(_ port: UInt16, name: String = "fleetengine.example") -> TLSSessionCache.Origin {
        TLSSessionCache.Origin(host: name, port: port, serverName: name)
    }
    /// The session `withSession` offers for `origin` now, if any.
    private func offered(_ cache: TLSSessionCache, _ origin: TLSSessionCache.Origin, now: Int = 0) -> Int? {
        var offered: Int?
        cache.withSession(for: origin, now: now) { offered = number($0) }
        return offered
    }

    func testSessionsPastThePerOriginBoundGoOldestFirstEachReleasedOnce() {
        var cache: TLSSessionCache? = self.cache(perOrigin: 3)
        for n in 1...5 { XCTAssertTrue(cache!.insert(session(n), expires: 100, for: origin(443))) }
        XCTAssertEqual(cache!.count(for: origin(443)), 3)
        XCTAssertEqual(released, [1, 2])
        cache = nil
        XCTAssertEqual(released.sorted(), [1, 2, 3, 4, 5])
    }

    func testOriginsPastTheBoundGoLeastRecentlyFilledFirst() {
        let cache = self.cache(origins: 2, perOrigin: 2)
        _ = cache.insert(session(1), expires: 100, for: origin(1))
        _ = cache.insert(session(2), expires: 100, for: origin(2))
        _ = cache.insert(session(3), expires: 100, for: origin(1))
        _ = cache.insert(session(4), expires: 100, for: origin(3))
        XCTAssertEqual(cache.originCount, 2)
        XCTAssertEqual(released, [2], "origin 2 was filled least recently")
        XCTAssertEqual(cache.count(for: origin(1)), 2)
        XCTAssertNil(offered(cache, origin(2)))
    }

    func testASessionIsOfferedOnlyToItsOwnOrigin() {
        let cache = self.cache(origins: 4)
        _ = cache.insert(session(1), expires: 100, for: origin(443))
        XCTAssertNil(offered(cache, origin(8443)), "another port")
        XCTAssertNil(offered(cache, origin(443, name: "provider.example")), "another name")
        XCTAssertNil(offered(cache, TLSSessionCache.Origin(host: "fleetengine.example", port: 443, serverName: "other.example")),
                     "another SNI name")
        XCTAssertEqual(offered(cache, origin(443)), 1)
    }

    /// A burst of dials (64 REST connections at once) must all resume from the one ticket the
    /// first connection brought back, as nginx's and HAProxy's do: once-only tickets gave the
    /// remote bench 62 full handshakes of 64.
    func testTheNewestSessionIsOfferedToEveryConnectionUntilANewerOneComes() {
        let cache = self.cache()
        _ = cache.insert(session(1), expires: 100, for: origin(443))
        _ = cache.insert(session(2), expires: 100, for: origin(443))
        for _ in 1...64 { XCTAssertEqual(offered(cache, origin(443)), 2) }
        XCTAssertEqual(released, [], "an offered session stays kept: the SSL holds its own reference")
        _ = cache.insert(session(3), expires: 100, for: origin(443))
        XCTAssertEqual(offered(cache, origin(443)), 3)
        XCTAssertEqual(cache.count(for: origin(443)), 3)
    }

    func testExpiredSessionsAreReleasedNotOffered() {
        let cache = self.cache()
        _ = cache.insert(session(1), expires: 50, for: origin(443))
        _ = cache.insert(session(2), expires: 10, for: origin(443))
        XCTAssertEqual(offered(cache, origin(443), now: 20), 1)
        XCTAssertEqual(released, [2])
        XCTAssertNil(offered(cache, origin(443), now: 50))
        XCTAssertEqual(released, [2, 1])
        XCTAssertEqual(cache.originCount, 0)
    }

    func testTheSameSessionDeliveredTwiceIsNotTakenTwice() {
        var cache: TLSSessionCache? = self.cache()
        XCTAssertTrue(cache!.insert(session(1), expires: 100, for: origin(443)))
        XCTAssertFalse(cache!.insert(session(1), expires: 100, for: origin(443)))
        cache = nil
        XCTAssertEqual(released, [1])
    }
}
