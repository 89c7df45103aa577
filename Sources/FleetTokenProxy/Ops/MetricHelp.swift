/// The `# HELP` line of each metric the sidecar exports (README, "Health and metrics", says the
/// same at more length). swift-prometheus takes help text only from metrics made on its registry
/// directly, and stops the process when the same name is made once with help and once without;
/// the sidecar's metrics go through swift-metrics, which has no help, so the lines are added
/// to the page as it is served. A metric left out of the table has no HELP line, which
/// `promtool check metrics` reports (IntegrationTests/OpsFilesTests).
enum MetricHelp {
    static let text: [String: String] = [
        ProxyMetrics.requestsTotal: "Client calls, by protocol and what the client saw: the HTTP status written (the gRPC status for gRPC), cancelled or cut.",
        ProxyMetrics.requestDuration: "Seconds from a call's request head to the end of its answer.",
        ProxyMetrics.cacheHits: "Calls whose token came from the cache at once.",
        ProxyMetrics.cacheMisses: "Calls that waited for a token.",
        ProxyMetrics.coalesced: "Cache misses that joined a token fetch already in flight.",
        ProxyMetrics.providerRequests: "Token provider fetches, by outcome.",
        ProxyMetrics.providerDuration: "Seconds one token provider fetch took.",
        ProxyMetrics.cachedEntities: "Entities in the token cache.",
        ProxyMetrics.openConnections: "Client connections open now.",
        ProxyMetrics.bufferedBytes: "Request bytes all connections hold now, before forwarding.",
        ProxyMetrics.bufferedBytesLimit: "The cap on held request bytes (--max-buffered-bytes).",
        ProxyMetrics.tlsHandshakes: "TLS handshakes the sidecar made as a client, by peer and whether the session resumed.",
        ProxyMetrics.upstreamConnectionsOpened: "Connections dialed to Fleet Engine, by protocol.",
        ProxyMetrics.upstreamPings: "Keepalive PINGs sent on idle upstream HTTP/2 connections.",
        ProxyMetrics.upstreamPingRoundTrip: "The last keepalive PING's round trip in seconds.",
        ProxyMetrics.upstreamGoAways: "GOAWAY frames received from Fleet Engine, by HTTP/2 error code.",
        ProxyMetrics.acceptErrors: "Failed accepts of client connections, by reason (emfile: out of file descriptors); each pauses accepting briefly.",
        ProxyMetrics.buildInfo: "Always 1; the labels name the build (as --version does).",
    ]

    /// `page` (the text exposition) with a `# HELP` line before each known metric's `# TYPE` line.
    static func addingHelp(to page: [UInt8]) -> [UInt8] {
        let typePrefix = Array("# TYPE ".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(page.count + 2048)
        var lineStart = 0
        while lineStart < page.count {
            let lineEnd = page[lineStart...].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? page.count
            let line = page[lineStart..<lineEnd]
            if line.starts(with: typePrefix) {
                let rest = line.dropFirst(typePrefix.count)
                let name = String(decoding: rest.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = text[name] { out += Array("# HELP \(name) \(help)\n".utf8) }
            }
            out += line
            lineStart = lineEnd
        }
        return out
    }
}
