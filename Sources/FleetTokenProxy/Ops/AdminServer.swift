/// The admin listener (`--admin-listen`): `GET /healthz`, `GET /readyz`, `GET /metrics`.
///
/// It runs on the sidecar's own loop, so an answer to `/healthz` is itself the proof that the
/// loop is alive; a stuck loop answers nothing and the probe times out.
final class AdminServer {
    /// What the admin pages read from the sidecar, on the loop thread, per request.
    struct Probes {
        /// Nil when ready; otherwise why not (not listening yet, draining).
        var notReadyReason: () -> String?
        /// Called before `/metrics` is rendered, to bring scrape-time metrics up to date.
        var beforeScrape: () -> Void
    }

    private let server: BufferedHTTPServer
    private(set) var boundDescription = ""

    init(loop: EventLoop, metrics: ProxyMetrics, probes: Probes) {
        server = BufferedHTTPServer(loop: loop, maxBodyBytes: 0) { request, respond in
            respond(Self.answer(request, metrics: metrics, probes: probes))
        }
    }

    @discardableResult
    func listen(on address: ListenAddress) throws -> String {
        boundDescription = try server.listen(on: address)
        return boundDescription
    }

    func close() { server.close() }

    static func answer(_ request: HTTPRequest, metrics: ProxyMetrics, probes: Probes) -> HTTPResponse {
        let known = ["/healthz", "/readyz", "/metrics"]
        guard known.contains(String(request.path)) else {
            return text(404, "not found: the admin listener serves /healthz, /readyz and /metrics\n")
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = text(405, "only GET\n")
            response.headers.add("Allow", "GET, HEAD")
            return response
        }
        switch request.path {
        case "/healthz":
            return text(200, "ok\n")
        case "/readyz":
            if let reason = probes.notReadyReason() { return text(503, "not ready: \(reason)\n") }
            return text(200, "ready\n")
        default:
            probes.beforeScrape()
            return HTTPResponse(status: 200, headers: [
                "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store",
            ], body: metrics.exposition())
        }
    }

    private static func text(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"],
                     body: Array(body.utf8))
    }
}
