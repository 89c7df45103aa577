import XCTest
@testable import FleetTokenProxy

final class RESTUpstreamRouteTests: XCTestCase {
    func testAutoOnHTTPSStartsOnHTTP2OfferingBothAndFallsBackOnceForGood() {
        var route = RESTUpstreamRoute(.auto, tls: true)
        XCTAssertTrue(route.overHTTP2)
        XCTAssertEqual(route.http2PoolALPN, ["h2", "http/1.1"])
        XCTAssertEqual(route.declined(), .fallBackToHTTP1(firstTime: true))
        XCTAssertFalse(route.overHTTP2)
        XCTAssertEqual(route.declined(), .fallBackToHTTP1(firstTime: false), "later declines still send REST waiters to HTTP/1.1")
        XCTAssertFalse(route.overHTTP2)
    }

    func testAutoOnHTTPKeepsRESTOnHTTP1() {
        var route = RESTUpstreamRoute(.auto, tls: false)
        XCTAssertFalse(route.overHTTP2)
        XCTAssertEqual(route.declined(), .fail)
    }

    func testPinnedRoutesNeverChange() {
        for tls in [false, true] {
            var h2 = RESTUpstreamRoute(.h2, tls: tls)
            XCTAssertTrue(h2.overHTTP2)
            XCTAssertEqual(h2.http2PoolALPN, ["h2"])
            XCTAssertEqual(h2.declined(), .fail, "pinned h2 fails as a lost connection, as before")
            XCTAssertTrue(h2.overHTTP2)
            var http1 = RESTUpstreamRoute(.http11, tls: tls)
            XCTAssertFalse(http1.overHTTP2)
            XCTAssertEqual(http1.http2PoolALPN, ["h2"], "the HTTP/2 pool carries gRPC only")
            XCTAssertEqual(http1.declined(), .fail)
        }
        XCTAssertEqual(RESTUpstreamRoute.http1PoolALPN, ["http/1.1"])
    }
}
