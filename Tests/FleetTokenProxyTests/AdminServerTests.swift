@testable import FleetTokenProxy
import Prometheus
import XCTest

final class AdminServerTests: XCTestCase {
    func answer(_ method: String, _ target: String, notReady: String? = nil, scraped: (() -> Void)? = nil) -> HTTPResponse {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        return AdminServer.answer(HTTPRequest(method: method, target: target), metrics: metrics,
                                  probes: .init(notReadyReason: { notReady }, beforeScrape: { scraped?() }))
    }

    func testReadyzIs200WhenReadyAnd503WithTheReasonWhenNot() {
        XCTAssertEqual(answer("GET", "/readyz").status, 200)
        let draining = answer("GET", "/readyz", notReady: "draining")
        XCTAssertEqual(draining.status, 503)
        XCTAssertEqual(String(decoding: draining.body, as: UTF8.self), "not ready: draining\n")
    }

    func testHealthzIs200EvenWhenNotReady() {
        XCTAssertEqual(answer("GET", "/healthz", notReady: "draining").status, 200)
    }

    func testMetricsAreScrapedFreshInPrometheusTextFormat() {
        var scrapes = 0
        let metrics = answer("GET", "/metrics?x=1", scraped: { scrapes += 1 })
        XCTAssertEqual(metrics.status, 200)
        XCTAssertEqual(metrics.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(scrapes, 1)
        XCTAssertTrue(String(decoding: metrics.body, as: UTF8.self).contains("fleet_token_proxy_open_connections"))
    }

    func testOtherPathsAndMethodsAreRefused() {
        XCTAssertEqual(answer("GET", "/").status, 404)
        XCTAssertEqual(answer("GET", "/v1/providers/p/vehicles/v1").status, 404)
        XCTAssertEqual(answer("POST", "/readyz").status, 405)
        XCTAssertEqual(answer("HEAD", "/healthz").status, 200)
    }

    /// The path ends at the first `?` byte, whatever follows it: split by `Character`, a
    /// combining mark after the `?` joined it into one grapheme and hid it. (The HTTP/1.1 parser
    /// refuses such a target before it gets here; the split is the router's, by byte.)
    func testThePathEndsAtTheFirstQuestionMarkByte() {
        XCTAssertEqual(HTTPRequest(method: "GET", target: "/healthz?\u{301}").path, "/healthz")
        XCTAssertEqual(HTTPRequest(method: "GET", target: "/healthz?a?b").path, "/healthz")
        XCTAssertEqual(HTTPRequest(method: "GET", target: "/healthz").path, "/healthz")
        XCTAssertEqual(HTTPRequest(method: "GET", target: "?x").path, "")
    }
}
