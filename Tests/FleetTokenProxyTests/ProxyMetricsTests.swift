@testable import FleetTokenProxy
import Prometheus
import XCTest

final class ProxyMetricsTests: XCTestCase {
    func page(_ metrics: ProxyMetrics) -> String { String(decoding: metrics.exposition(), as: UTF8.self) }

    func testCallsAreCountedByProtocolAndCodeWithADurationHistogram() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.callFinished(protocol: .http1, code: .status(200), seconds: 0.0004)
        metrics.callFinished(protocol: .http1, code: .status(200), seconds: 0.02)
        metrics.callFinished(protocol: .grpc, code: .status(14), seconds: 1)
        let text = page(metrics)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_requests_total{protocol="http1",code="200"} 2"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_requests_total{protocol="grpc",code="14"} 1"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_request_duration_seconds_bucket{protocol="http1",le="0.0005"} 1"#), text)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_request_duration_seconds_count{protocol="http1"} 2"#), text)
        XCTAssertTrue(text.contains("# TYPE fleet_token_proxy_request_duration_seconds histogram"), text)
    }

    func testCacheCountersFollowTheCacheByDifference() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.observeCache(TokenCacheStatistics(hits: 5, misses: 2, coalesced: 1), entities: 2)
        metrics.observeCache(TokenCacheStatistics(hits: 9, misses: 3, coalesced: 1), entities: 3)
        let text = page(metrics)
        XCTAssertTrue(text.contains("fleet_token_proxy_token_cache_hits_total 9\n"), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_token_cache_misses_total 3\n"), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_singleflight_coalesced_total 1\n"), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_cached_entities 3.0\n") || text.contains("fleet_token_proxy_cached_entities 3\n"), text)
    }

    func testProviderOutcomesAndOpenConnections() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.providerFetchFinished(ProxyMetrics.outcome(.success(FetchedToken(token: "t", expiresAt: 1))), seconds: 0.01)
        metrics.providerFetchFinished(ProxyMetrics.outcome(.failure(.providerRefused("no"))), seconds: 0.01)
        metrics.providerFetchFinished(ProxyMetrics.outcome(.failure(.providerUnavailable("down"))), seconds: 0.01)
        metrics.providerFetchFinished(ProxyMetrics.outcome(.failure(.providerAnswerUnusable("junk"))), seconds: 0.01)
        metrics.openConnectionsChanged(to: 4)
        let text = page(metrics)
        for outcome in ["success", "refused", "unavailable", "unusable"] {
            XCTAssertTrue(text.contains("fleet_token_proxy_provider_requests_total{outcome=\"\(outcome)\"} 1"), text)
        }
        XCTAssertTrue(text.contains("fleet_token_proxy_provider_request_duration_seconds_count 4"), text)
        XCTAssertTrue(text.contains("fleet_token_proxy_open_connections 4"), text)
    }

    func testBufferedBytesAndTheirLimitAreGauges() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.observeBufferBudget(used: 4096, limit: 65536)
        let page = MetricsText(page(metrics))
        XCTAssertEqual(page.value("fleet_token_proxy_buffered_bytes"), 4096, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_buffered_bytes_limit"), 65536, page.text)
        metrics.observeBufferBudget(used: 0, limit: 65536)
        XCTAssertEqual(MetricsText(self.page(metrics)).value("fleet_token_proxy_buffered_bytes"), 0)
    }

    func testDisabledMetricsRecordNothing() {
        let metrics = ProxyMetrics()
        metrics.callFinished(protocol: .http1, code: .status(200), seconds: 0.1)
        metrics.openConnectionsChanged(to: 3)
        XCTAssertFalse(metrics.isEnabled)
        XCTAssertEqual(metrics.exposition(), [])
    }
}

/// The sample values of a Prometheus text page without labels, by name.
struct MetricsText {
    let text: String
    init(_ text: String) { self.text = text }

    func value(_ name: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }
}

/// `fleet_token_proxy_build_info`: one series, value 1, labelled with the build that answers.
final class BuildInfoMetricTests: XCTestCase {
    func testBuildInfoIsOneSeriesOfValueOneNamingVersionAndRevision() {
        let text = String(decoding: ProxyMetrics(registry: PrometheusCollectorRegistry()).exposition(), as: UTF8.self)
        let series = text.split(separator: "\n").filter { $0.hasPrefix("fleet_token_proxy_build_info{") }
        XCTAssertEqual(series.count, 1, text)
        let line = String(series.first ?? "")
        XCTAssertTrue(line.contains(#"version="\#(BuildInfo.version)""#), line)
        XCTAssertTrue(line.contains(#"revision="\#(BuildInfo.revision)""#), line)
        XCTAssertTrue(line.hasSuffix(" 1") || line.hasSuffix(" 1.0"), line)
        XCTAssertTrue(text.contains("# TYPE fleet_token_proxy_build_info gauge"), text)
    }
}

/// Each metric's `# HELP` line comes right before its `# TYPE` line; the rest of the page is kept.
final class MetricHelpTests: XCTestCase {
    func testEveryMetricTheSidecarMakesHasHelpBeforeItsType() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.callFinished(protocol: .grpc, code: .status(0), seconds: 0.01)
        metrics.providerFetchFinished(.success, seconds: 0.01)
        metrics.upstreamGoAwayReceived(code: 0)
        metrics.observeBufferBudget(used: 0, limit: 65536)
        let lines = String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n")
        let types = lines.indices.filter { lines[$0].hasPrefix("# TYPE ") }
        XCTAssertGreaterThanOrEqual(types.count, 17)
        for index in types {
            let name = lines[index].split(separator: " ")[2]
            XCTAssertTrue(index > 0 && lines[index - 1].hasPrefix("# HELP \(name) "), "\(name): \(lines[max(0, index - 1)])")
        }
    }

    func testAnUnknownMetricIsLeftAsItIs() {
        let page = Array("# TYPE other_total counter\nother_total 1\n".utf8)
        XCTAssertEqual(MetricHelp.addingHelp(to: page), page)
        let known = Array("# TYPE fleet_token_proxy_cached_entities gauge\nfleet_token_proxy_cached_entities 3".utf8)
        XCTAssertEqual(String(decoding: MetricHelp.addingHelp(to: known), as: UTF8.self),
                       "# HELP fleet_token_proxy_cached_entities Entities in the token cache.\n" + String(decoding: known, as: UTF8.self))
    }
}

/// Series a dashboard or alert queries are on the page before their first event.
final class PresetSeriesTests: XCTestCase {
    func testTheGoAwayFamilyIsThereBeforeTheFirstGoAway() {
        let text = String(decoding: ProxyMetrics(registry: PrometheusCollectorRegistry()).exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_upstream_goaways_total{code="0"} 0"#), text)
    }
}
