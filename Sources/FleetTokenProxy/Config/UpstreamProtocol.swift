/// Which protocol REST calls use to Fleet Engine (`--upstream-protocol`, docs/CONTRACT.md §6).
/// gRPC calls always go over HTTP/2.
package enum UpstreamProtocol: String, Sendable, CaseIterable {
    /// REST over HTTP/2 on an `https://` upstream that agrees to `h2` by ALPN, else over the
    /// HTTP/1.1 pool (`RESTUpstreamRoute`).
    case auto
    /// REST over the multiplexed HTTP/2 connections (h2c with prior knowledge for http://).
    case h2
    /// REST over the HTTP/1.1 pool.
    case http11 = "http1.1"

    package static func parse(_ text: String) throws(ConfigError) -> UpstreamProtocol {
        guard let value = UpstreamProtocol(rawValue: text) else {
            throw ConfigError("--upstream-protocol must be one of auto, h2, http1.1, not \(ConfigError.quoted(text))")
        }
        return value
    }
}
