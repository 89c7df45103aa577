import Logging

/// What every client connection of one loop shares: the token cache, the upstream pool and
/// the counters the demo and the metrics read.
final class ProxyCore {
    let loop: EventLoop
    let cache: TokenCache
    let upstream: HTTP1UpstreamPool
    /// Multiplexed HTTP/2 connections for gRPC and REST-over-HTTP/2 calls.
    let upstreamH2: HTTP2UpstreamPool
    /// REST calls from HTTP/1.1 clients go over `upstreamH2` now (`RESTUpstreamRoute`).
    var restOverHTTP2: Bool { upstreamH2.carriesREST }
    /// REST calls from HTTP/2 clients go over `upstreamH2` now, else over `upstream`.
    var restFromHTTP2ClientsOverHTTP2: Bool { upstreamH2.carriesRESTFromHTTP2Clients }
    let upstreamOrigin: Origin
    let limits: ServerLimits
    /// Request bytes held by every connection of the loop together (`limits.maxBufferedBytes`).
    let bufferBudget: BufferBudget
    let logger: Logger
    let clock: TokenClock
    var statistics = ProxyStatistics()
    /// Prometheus metrics (recording nothing unless the admin listener is on).
    let metrics: ProxyMetrics
    /// The per-call access log; nil unless `--access-log`.
    let accessLogger: Logger?
    /// Per entity type (by ordinal), the quota project a forwarded call carries as
    /// `x-goog-user-project` (docs/CONTRACT.md §4a): set only where the token is ADC's access
    /// token itself (`--signer adc`).
    private let quotaProjects: [String?]

    init(loop: EventLoop, cache: TokenCache, upstream: HTTP1UpstreamPool, upstreamH2: HTTP2UpstreamPool, limits: ServerLimits,
         clock: TokenClock, logger: Logger, metrics: ProxyMetrics = ProxyMetrics(), accessLogger: Logger? = nil,
         quotaProject: (EntityType) -> String? = { _ in nil }) {
        quotaProjects = EntityType.allCases.sorted { $0.ordinal < $1.ordinal }.map(quotaProject)
        self.metrics = metrics
        self.accessLogger = accessLogger
        self.loop = loop
        self.cache = cache
        self.upstream = upstream
        self.upstreamH2 = upstreamH2
        self.upstreamOrigin = upstream.origin
        self.limits = limits
        self.bufferBudget = BufferBudget(limit: limits.maxBufferedBytes)
        self.clock = clock
        self.logger = logger
    }
}

extension ProxyCore {
    /// The `x-goog-user-project` a call about an entity of `type` carries, nil for none.
    func quotaProject(for type: EntityType) -> String? { quotaProjects[Int(type.ordinal)] }
}

/// Counts of what the sidecar did with calls, for the demo summary and metrics.
struct ProxyStatistics: Sendable, Equatable {
    /// Calls whose head was read.
    package var calls = 0
    /// Calls sent to Fleet Engine (a retry counts once).
    package var forwarded = 0
    /// Calls answered by the sidecar itself, by HTTP status.
    var refusedByStatus: [Int: Int] = [:]
    /// gRPC calls answered by the sidecar itself, by gRPC status.
    var refusedByGRPCStatus: [Int: Int] = [:]
    /// Upstream answers relayed, by HTTP status.
    var upstreamStatus: [Int: Int] = [:]
    /// Requests sent again after a reused upstream connection closed before answering.
    var upstreamRetries = 0
    var openConnections = 0
    var acceptedConnections = 0
}

/// A client-facing connection the `ProxyServer` owns: HTTP/1.1, or HTTP/2 after the preface.
protocol ClientConnection: AnyObject {
    /// The one close path; idempotent.
    func close(reason: String)
    /// Stop taking new calls; close once the calls in flight are done.
    func drain()
}
