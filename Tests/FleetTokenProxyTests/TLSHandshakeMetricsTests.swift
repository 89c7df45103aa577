@testable import FleetTokenProxy
import Prometheus
import XCTest

final class TLSHandshakeMetricsTests: XCTestCase {
    func testHandshakesAreCountedByPeerAndResumptionFromZero() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.tlsHandshakeFinished(peer: .upstream, resumed: false)
        metrics.tlsHandshakeFinished(peer: .upstream, resumed: true)
        metrics.tlsHandshakeFinished(peer: .upstream, resumed: true)
        metrics.tlsHandshakeFinished(peer: .provider, resumed: false)
        metrics.tlsHandshakeFinished(peer: .google, resumed: true)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_tls_handshakes_total{peer="upstream",resumed="true"} 2"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_tls_handshakes_total{peer="upstream",resumed="false"} 1"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_tls_handshakes_total{peer="provider",resumed="false"} 1"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_tls_handshakes_total{peer="provider",resumed="true"} 0"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_tls_handshakes_total{peer="google",resumed="true"} 1"#), text)
    }
}
