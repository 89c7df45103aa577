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

    func testRESTFromHTTP2ClientsGoesByHTTP1OnlyWhenPinnedOrAfterAFallBack() {
        XCTAssertTrue(RESTUpstreamRoute(.auto, tls: false).fromHTTP2ClientsOverHTTP2, "auto on http://: h2c clients' REST stays on h2c")
        XCTAssertTrue(RESTUpstreamRoute(.h2, tls: false).fromHTTP2ClientsOverHTTP2)
        XCTAssertTrue(RESTUpstreamRoute(.h2, tls: true).fromHTTP2ClientsOverHTTP2)
        XCTAssertFalse(RESTUpstreamRoute(.http11, tls: false).fromHTTP2ClientsOverHTTP2)
        XCTAssertFalse(RESTUpstreamRoute(.http11, tls: true).fromHTTP2ClientsOverHTTP2)
        var auto = RESTUpstreamRoute(.auto, tls: true)
        XCTAssertTrue(auto.fromHTTP2ClientsOverHTTP2)
        _ = auto.declined()
        XCTAssertFalse(auto.fromHTTP2ClientsOverHTTP2, "an HTTP/1.1-only upstream takes every REST call by HTTP/1.1")
        var pinned = RESTUpstreamRoute(.h2, tls: true)
        _ = pinned.declined()
        XCTAssertTrue(pinned.fromHTTP2ClientsOverHTTP2, "pinned h2 never moves")
    }
}
