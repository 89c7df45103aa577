@testable import FleetTokenProxy
import Prometheus
import XCTest

final class UpstreamConnectionMetricsTests: XCTestCase {
    func testConnectionsPingsAndGoAwaysAreCounted() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.upstreamConnectionOpened(.h2)
        metrics.upstreamConnectionOpened(.h2)
        metrics.upstreamPingSent()
        metrics.upstreamPingAcked(roundTrip: 0.021)
        metrics.upstreamGoAwayReceived(code: 0xb)
        metrics.upstreamGoAwayReceived(code: 0xb)
        metrics.upstreamGoAwayReceived(code: 0x1234)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_upstream_connections_opened_total{protocol="h2"} 2"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_upstream_connections_opened_total{protocol="http1.1"} 0"#), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_upstream_pings_total 1"), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_upstream_ping_rtt_seconds 0.021"), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_upstream_goaways_total{code="11"} 2"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_upstream_goaways_total{code="other"} 1"#), text)
    }
}
