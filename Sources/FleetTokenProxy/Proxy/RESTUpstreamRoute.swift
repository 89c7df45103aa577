/// Which upstream pool carries REST calls, from HTTP/1.1 clients and from HTTP/2 clients
/// (docs/CONTRACT.md §6), and what the HTTP/2 pool's TLS connections offer by ALPN. Pinned
/// (`h2`, `http1.1`), or `auto` on `http://`, the route never changes. `auto` on `https://`
/// starts on HTTP/2, offering `h2` and `http/1.1`; the first connection that comes up without
/// `h2` moves REST to HTTP/1.1 for the rest of the process's life.
///
/// The two kinds of client differ only for `auto` on `http://`: REST from HTTP/1.1 clients
/// goes by HTTP/1.1, REST from h2c clients by h2c (the upstream is assumed to speak h2c there,
/// as gRPC needs).
struct RESTUpstreamRoute: Equatable {
    /// REST calls from HTTP/1.1 clients go over the HTTP/2 pool.
    private(set) var overHTTP2: Bool
    /// REST calls from HTTP/2 clients go over the HTTP/2 pool.
    private(set) var fromHTTP2ClientsOverHTTP2: Bool
    /// The route follows the upstream's ALPN answer (`auto` on `https://`).
    let followsALPN: Bool

    init(_ upstreamProtocol: UpstreamProtocol, tls: Bool) {
        switch upstreamProtocol {
        case .h2: (overHTTP2, fromHTTP2ClientsOverHTTP2, followsALPN) = (true, true, false)
        case .http11: (overHTTP2, fromHTTP2ClientsOverHTTP2, followsALPN) = (false, false, false)
        case .auto: (overHTTP2, fromHTTP2ClientsOverHTTP2, followsALPN) = (tls, true, tls)
        }
    }

    /// What the HTTP/2 pool's TLS connections offer: `http/1.1` too when the answer decides
    /// REST's route, so that an HTTP/1.1-only server can say so instead of failing the handshake.
    var http2PoolALPN: [String] { followsALPN ? ["h2", "http/1.1"] : ["h2"] }

    /// What the HTTP/1.1 pool's TLS connections offer.
    static let http1PoolALPN = ["http/1.1"]

    /// What becomes of the calls waiting on an HTTP/2 pool connection that came up without `h2`.
    enum Declined: Equatable {
        /// They fail as a lost connection does (gRPC sends again, then answers UNAVAILABLE).
        case fail
        /// Nothing of them was sent: REST calls go again over HTTP/1.1 (`firstTime`: the route
        /// changed just now), gRPC calls as on `fail`.
        case fallBackToHTTP1(firstTime: Bool)
    }

    /// A connection of the HTTP/2 pool came up and the server did not choose `h2` (it chose
    /// `http/1.1`, or no ALPN at all).
    mutating func declined() -> Declined {
        guard followsALPN else { return .fail }
        defer { (overHTTP2, fromHTTP2ClientsOverHTTP2) = (false, false) }
        return .fallBackToHTTP1(firstTime: overHTTP2)
    }
}
