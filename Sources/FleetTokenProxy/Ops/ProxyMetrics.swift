import CoreMetrics
import Metrics
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The sidecar's Prometheus metrics, recorded through swift-metrics into a
/// `PrometheusCollectorRegistry` and served by the admin listener's `/metrics`.
///
/// Labels are bounded: protocol, status code, provider outcome, TLS peer. Never a token, never an entity
/// id. A disabled instance (no `--admin-listen`) records nothing and costs one branch a call.
///
/// Loop-thread only: the label caches and the last cache counts are plain fields.
final class ProxyMetrics {
    /// What a provider fetch came to, for `fleet_token_proxy_provider_requests_total{outcome}`.
    enum ProviderOutcome: String, Sendable, CaseIterable {
        /// A usable token.
        case success
        /// The provider answered 4xx.
        case refused
        /// Unreachable, too slow, or 5xx.
        case unavailable
        /// An answer with no usable token (bad JSON, no token, expired, no expiry).
        case unusable
    }

    /// Who the sidecar shook hands with, for `fleet_token_proxy_tls_handshakes_total{peer}`.
    enum TLSPeer: String, CaseIterable {
        /// Fleet Engine (HTTP/1.1 pool and HTTP/2 connections).
        case upstream
        /// The token provider.
        case provider
        /// Google's credential endpoints: the OAuth token endpoint, IAM (docs/CONTRACT.md §4a).
        case google
    }

    static let requestsTotal = "fleet_token_proxy_requests_total"
    static let requestDuration = "fleet_token_proxy_request_duration_seconds"
    static let cacheHits = "fleet_token_proxy_token_cache_hits_total"
    static let cacheMisses = "fleet_token_proxy_token_cache_misses_total"
    static let coalesced = "fleet_token_proxy_singleflight_coalesced_total"
    static let providerRequests = "fleet_token_proxy_provider_requests_total"
    static let providerDuration = "fleet_token_proxy_provider_request_duration_seconds"
    static let cachedEntities = "fleet_token_proxy_cached_entities"
    static let openConnections = "fleet_token_proxy_open_connections"
    static let bufferedBytes = "fleet_token_proxy_buffered_bytes"
    static let bufferedBytesLimit = "fleet_token_proxy_buffered_bytes_limit"
    static let tlsHandshakes = "fleet_token_proxy_tls_handshakes_total"
    static let upstreamConnectionsOpened = "fleet_token_proxy_upstream_connections_opened_total"
    static let upstreamPings = "fleet_token_proxy_upstream_pings_total"
    static let upstreamPingRoundTrip = "fleet_token_proxy_upstream_ping_rtt_seconds"
    static let upstreamGoAways = "fleet_token_proxy_upstream_goaways_total"
    static let acceptErrors = "fleet_token_proxy_accept_errors_total"
    static let buildInfo = "fleet_token_proxy_build_info"

    /// How a connection to Fleet Engine speaks, for `…_upstream_connections_opened_total{protocol}`.
    enum UpstreamProtocol: String, CaseIterable {
        case h2
        case http1 = "http1.1"
    }

    let isEnabled: Bool
    private let registry: PrometheusCollectorRegistry?
    private let factory: (any MetricsFactory)?

    private struct CallLabels: Hashable {
        var clientProtocol: CallRecord.ClientProtocol
        var code: CallOutcome.Code
    }
    private var callCounters: [CallLabels: Counter] = [:]
    private var callTimers: [CallRecord.ClientProtocol: CoreMetrics.Timer] = [:]
    private var providerCounters: [ProviderOutcome: Counter] = [:]
    private var providerTimer: CoreMetrics.Timer?
    private struct HandshakeLabels: Hashable {
        var peer: TLSPeer
        var resumed: Bool
    }
    private var handshakeCounters: [HandshakeLabels: Counter] = [:]
    private var upstreamOpened: [UpstreamProtocol: Counter] = [:]
    private var pings: Counter?
    private var pingRoundTrip: Gauge?
    /// By HTTP/2 error code, 0 to 13; any other code counts as `other` (a bounded label).
    private var goAways: [String: Counter] = [:]
    /// By `AcceptError.Reason`, every series there from the start.
    private var acceptErrorCounters: [AcceptError.Reason: Counter] = [:]
    private var hits: Counter?
    private var misses: Counter?
    private var coalescedFetches: Counter?
    private var entities: Gauge?
    private var connections: Gauge?
    private var buffered: Gauge?
    private var bufferedLimit: Gauge?
    /// The cache's counts at the last scrape: its counters move by the difference.
    private var lastCache = TokenCacheStatistics()

    /// A recorder that records nothing (metrics are off unless `--admin-listen` is given).
    package init() {
        isEnabled = false
        registry = nil
        factory = nil
    }

    /// Records into `registry` through a factory made for it; the process-wide one is
    /// `bootstrapped()`, tests make their own.
    init(registry: PrometheusCollectorRegistry) {
        isEnabled = true
        self.registry = registry
        let factory = Self.factory(for: registry)
        self.factory = factory
        hits = Counter(label: Self.cacheHits, factory: factory)
        misses = Counter(label: Self.cacheMisses, factory: factory)
        coalescedFetches = Counter(label: Self.coalesced, factory: factory)
        entities = Gauge(label: Self.cachedEntities, factory: factory)
        connections = Gauge(label: Self.openConnections, factory: factory)
        buffered = Gauge(label: Self.bufferedBytes, factory: factory)
        bufferedLimit = Gauge(label: Self.bufferedBytesLimit, factory: factory)
        providerTimer = CoreMetrics.Timer(label: Self.providerDuration, factory: factory)
        for upstreamProtocol in UpstreamProtocol.allCases {
            upstreamOpened[upstreamProtocol] = Counter(label: Self.upstreamConnectionsOpened,
                                                       dimensions: [("protocol", upstreamProtocol.rawValue)], factory: factory)
        }
        pings = Counter(label: Self.upstreamPings, factory: factory)
        pingRoundTrip = Gauge(label: Self.upstreamPingRoundTrip, factory: factory)
        // Four series, there from the start so that a rate over them needs no first handshake.
        for peer in TLSPeer.allCases {
            for resumed in [false, true] {
                handshakeCounters[HandshakeLabels(peer: peer, resumed: resumed)] = Counter(
                    label: Self.tlsHandshakes, dimensions: [("peer", peer.rawValue), ("resumed", String(resumed))], factory: factory)
            }
        }
        // GOAWAY NO_ERROR, there from the start as the handshakes are: the family a dashboard or an
        // alert queries exists before Fleet Engine first sends one.
        goAways["0"] = Counter(label: Self.upstreamGoAways, dimensions: [("code", "0")], factory: factory)
        for reason in AcceptError.Reason.allCases {
            acceptErrorCounters[reason] = Counter(label: Self.acceptErrors, dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        entities?.record(0)
        connections?.record(0)
        // Always 1, as Prometheus exporters do: the labels say which build answers the scrape,
        // and a query can join them onto any other series.
        Gauge(label: Self.buildInfo, dimensions: [("version", BuildInfo.version), ("revision", BuildInfo.revision)],
              factory: factory).record(1)
    }

    /// Metrics in the registry `MetricsSystem` was bootstrapped with, once per process, so that
    /// libraries reporting through swift-metrics land on the same `/metrics` page. One sidecar
    /// a process: a second one would add to the same series.
    static func bootstrapped() -> ProxyMetrics {
        ProxyMetrics(registry: processRegistry)
    }

    private static let processRegistry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(factory(for: registry))
        return registry
    }()

    private static func factory(for registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        // A proxy hop on loopback takes tens of microseconds; Fleet Engine calls, milliseconds
        // to seconds. The default buckets start at 5 ms.
        factory.durationHistogramBuckets[requestDuration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        ]
        factory.durationHistogramBuckets[providerDuration] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10),
        ]
        return factory
    }

    /// One client call ended: `protocol` is `http1`, `h2` or `grpc`; `code` what its client saw
    /// (docs/CONTRACT.md §5, "What a call is recorded as"): the HTTP status written, the gRPC
    /// status for gRPC, `cancelled` or `cut`; `seconds` from its head read to its end. The
    /// label's text is made once per series, not per call.
    func callFinished(protocol clientProtocol: CallRecord.ClientProtocol, code: CallOutcome.Code, seconds: Double) {
        guard isEnabled, let factory else { return }
        let labels = CallLabels(clientProtocol: clientProtocol, code: code)
        let counter: Counter
        if let existing = callCounters[labels] {
            counter = existing
        } else {
            counter = Counter(label: Self.requestsTotal, dimensions: [("protocol", clientProtocol.rawValue), ("code", code.label)], factory: factory)
            callCounters[labels] = counter
        }
        counter.increment()
        let timer: CoreMetrics.Timer
        if let existing = callTimers[clientProtocol] {
            timer = existing
        } else {
            timer = CoreMetrics.Timer(label: Self.requestDuration, dimensions: [("protocol", clientProtocol.rawValue)], factory: factory)
            callTimers[clientProtocol] = timer
        }
        timer.recordSeconds(max(0, seconds))
    }

    /// One token provider fetch ended (a resend after a closed keep-alive connection is part of it).
    func providerFetchFinished(_ outcome: ProviderOutcome, seconds: Double) {
        guard isEnabled, let factory else { return }
        let counter: Counter
        if let existing = providerCounters[outcome] {
            counter = existing
        } else {
            counter = Counter(label: Self.providerRequests, dimensions: [("outcome", outcome.rawValue)], factory: factory)
            providerCounters[outcome] = counter
        }
        counter.increment()
        providerTimer?.recordSeconds(max(0, seconds))
    }

    /// One client TLS handshake finished towards `peer`: `resumed` when the peer took the
    /// session offered (docs/CONTRACT.md §7), else a full handshake.
    func tlsHandshakeFinished(peer: TLSPeer, resumed: Bool) {
        handshakeCounters[HandshakeLabels(peer: peer, resumed: resumed)]?.increment()
    }

    /// A connection to Fleet Engine was dialed (start-up, a call, or a replacement).
    func upstreamConnectionOpened(_ upstreamProtocol: UpstreamProtocol) {
        upstreamOpened[upstreamProtocol]?.increment()
    }

    /// An idle upstream HTTP/2 connection sent a keepalive PING.
    func upstreamPingSent() { pings?.increment() }

    /// The last keepalive PING's round trip.
    func upstreamPingAcked(roundTrip seconds: Double) { pingRoundTrip?.record(seconds) }

    /// The upstream sent GOAWAY with HTTP/2 error `code`.
    func upstreamGoAwayReceived(code: UInt32) {
        guard isEnabled, let factory else { return }
        let label = code <= 13 ? String(code) : "other"
        if let counter = goAways[label] {
            counter.increment()
            return
        }
        let counter = Counter(label: Self.upstreamGoAways, dimensions: [("code", label)], factory: factory)
        goAways[label] = counter
        counter.increment()
    }

    /// A client listener's accept failed (it pauses: `AcceptPause`).
    func acceptFailed(_ reason: AcceptError.Reason) { acceptErrorCounters[reason]?.increment() }

    /// The outcome label for a fetch result.
    static func outcome(_ result: Result<FetchedToken, ProxyFailure>) -> ProviderOutcome {
        switch result {
        case .success: return .success
        case .failure(.providerRefused): return .refused
        case .failure(.providerAnswerUnusable): return .unusable
        case .failure: return .unavailable
        }
    }

    /// Client connections open now.
    func openConnectionsChanged(to count: Int) {
        guard isEnabled else { return }
        connections?.record(count)
    }

    /// Brings the cache metrics up to date from the cache's own counts (read at scrape time, so
    /// the cache needs no metrics code). Counters move by what changed since the last call.
    func observeCache(_ statistics: TokenCacheStatistics, entities count: Int) {
        guard isEnabled else { return }
        hits?.increment(by: max(0, statistics.hits - lastCache.hits))
        misses?.increment(by: max(0, statistics.misses - lastCache.misses))
        coalescedFetches?.increment(by: max(0, statistics.coalesced - lastCache.coalesced))
        lastCache = statistics
        entities?.record(count)
    }

    /// Request bytes held by all connections now, and the cap on them (`--max-buffered-bytes`),
    /// read at scrape time.
    func observeBufferBudget(used: Int, limit: Int) {
        guard isEnabled else { return }
        buffered?.record(used)
        bufferedLimit?.record(limit)
    }

    /// The Prometheus text exposition (format 0.0.4) of everything recorded, with HELP lines.
    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry?.emit(into: &buffer)
        return MetricHelp.addingHelp(to: buffer)
    }
}
