@testable import FleetTokenProxy
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--admin-listen`: `/healthz`, `/readyz` and Prometheus `/metrics`.
final class AdminListenerTests: XCTestCase {
    var standIns: StandInHost!
    var sidecar: SidecarProcess!
    var admin = ""

    override func setUpWithError() throws {
        standIns = try StandInHost()
        sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--admin-listen", "127.0.0.1:0",
        ])
        admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
    }

    override func tearDown() {
        sidecar?.stop()
        standIns?.stop()
    }

    func scrape() throws -> MetricsPage {
        let answer = try httpGet("http://\(admin)/metrics")
        XCTAssertEqual(answer.status, 200)
        return MetricsPage(text: answer.body)
    }

    func call(_ path: String) throws -> Int {
        try httpGet(sidecar.baseURL + path).status
    }

    func testHealthAndReadinessWhileServing() throws {
        let health = try httpGet("http://\(admin)/healthz")
        XCTAssertEqual(health.status, 200)
        let ready = try httpGet("http://\(admin)/readyz")
        XCTAssertEqual(ready.status, 200, ready.body)
        XCTAssertEqual(try httpGet("http://\(admin)/nothing-here").status, 404)
        // The admin port is not a proxy: Fleet Engine paths are not served there.
        XCTAssertEqual(try httpGet("http://\(admin)/v1/providers/p/vehicles/v1").status, 404)
    }

    func testProviderCounterMovesByExactlyNForNColdEntities() throws {
        let before = try scrape()
        let n = 5
        for i in 0..<n { XCTAssertEqual(try call("/v1/providers/p/vehicles/cold-\(i)"), 200) }
        let after = try scrape()
        let success = ["outcome": "success"]
        let delta = (after.value("fleet_token_proxy_provider_requests_total", success) ?? 0)
            - (before.value("fleet_token_proxy_provider_requests_total", success) ?? 0)
        XCTAssertEqual(delta, Double(n), after.text)
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, n)
        XCTAssertEqual(after.value("fleet_token_proxy_token_cache_misses_total"), Double(n))
        XCTAssertEqual(after.value("fleet_token_proxy_token_cache_hits_total"), 0)
        XCTAssertEqual(after.value("fleet_token_proxy_cached_entities"), Double(n))
        XCTAssertEqual(after.value("fleet_token_proxy_provider_request_duration_seconds_count"), Double(n))

        // The same entities again: all hits, no provider request.
        for i in 0..<n { XCTAssertEqual(try call("/v1/providers/p/vehicles/cold-\(i)"), 200) }
        let warm = try scrape()
        XCTAssertEqual(warm.value("fleet_token_proxy_provider_requests_total"), Double(n))
        XCTAssertEqual(warm.value("fleet_token_proxy_token_cache_hits_total"), Double(n))
        XCTAssertEqual(warm.value("fleet_token_proxy_token_cache_misses_total"), Double(n))
    }

    func testProviderFailuresAreCountedByOutcome() throws {
        standIns.sync { self.standIns.provider.behaviour = .status(401) }
        XCTAssertEqual(try call("/v1/providers/p/trips/refused"), 403)
        standIns.sync { self.standIns.provider.behaviour = .garbage }
        XCTAssertEqual(try call("/v1/providers/p/trips/garbage"), 502)
        standIns.sync { self.standIns.provider.behaviour = .status(500) }
        XCTAssertEqual(try call("/v1/providers/p/trips/broken"), 503)
        let page = try scrape()
        XCTAssertEqual(page.value("fleet_token_proxy_provider_requests_total", ["outcome": "refused"]), 1, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_provider_requests_total", ["outcome": "unusable"]), 1)
        XCTAssertEqual(page.value("fleet_token_proxy_provider_requests_total", ["outcome": "unavailable"]), 1)
        XCTAssertNil(page.value("fleet_token_proxy_provider_requests_total", ["outcome": "success"]))
    }

    func testEveryMetricIsOnThePageAndNoEntityIdOrToken() throws {
        // Coalesced: two calls for one cold entity while its fetch is slow.
        standIns.sync { self.standIns.provider.behaviour = .delay(1.0) }
        let url = sidecar.baseURL + "/v1/providers/p/vehicles/shared-vehicle-id"
        let threads = (0..<2).map { _ in Thread { _ = try? httpGet(url) } }
        threads.forEach { $0.start() }
        // Open connections: one held open while scraping.
        let held = try KeepAliveClient(address: sidecar.address)
        usleep(2_000_000)
        XCTAssertEqual(held.get("/v1/providers/p/vehicles/shared-vehicle-id"), 200)
        let page = try scrape()

        for name in [
            "fleet_token_proxy_token_cache_hits_total", "fleet_token_proxy_token_cache_misses_total",
            "fleet_token_proxy_provider_requests_total", "fleet_token_proxy_provider_request_duration_seconds_bucket",
            "fleet_token_proxy_provider_request_duration_seconds_sum", "fleet_token_proxy_singleflight_coalesced_total",
            "fleet_token_proxy_cached_entities", "fleet_token_proxy_open_connections",
        ] {
            XCTAssertNotNil(page.value(name), "\(name) missing from\n\(page.text)")
        }
        XCTAssertEqual(page.value("fleet_token_proxy_singleflight_coalesced_total"), 1, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_cached_entities"), 1)
        XCTAssertGreaterThanOrEqual(page.value("fleet_token_proxy_open_connections") ?? 0, 1)
        XCTAssertTrue(page.text.contains("# TYPE fleet_token_proxy_provider_request_duration_seconds histogram"), page.text)
        XCTAssertFalse(page.text.contains("shared-vehicle-id"), "an entity id is in the metrics")
        XCTAssertFalse(page.text.contains("eyJ"), "something token-like is in the metrics")
    }

    /// Needs `ProxyMetrics.callFinished` at the end of each call in the HTTP/1 connection.
    func testEachCallIsCountedByProtocolAndCodeWithItsDuration() throws {
        XCTAssertEqual(try call("/v1/providers/p/vehicles/v1"), 200)
        XCTAssertEqual(try call("/v1/providers/p/vehicles/v1"), 200)
        XCTAssertEqual(try call("/v1/providers/p/not-fleet-engine"), 404)
        let page = try scrape()
        XCTAssertEqual(page.value("fleet_token_proxy_requests_total", ["protocol": "http1", "code": "200"]), 2, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_requests_total", ["protocol": "http1", "code": "404"]), 1)
        XCTAssertEqual(page.value("fleet_token_proxy_request_duration_seconds_count", ["protocol": "http1"]), 3)
        XCTAssertNotNil(page.value("fleet_token_proxy_request_duration_seconds_bucket", ["protocol": "http1", "le": "0.001"]))
    }
}
