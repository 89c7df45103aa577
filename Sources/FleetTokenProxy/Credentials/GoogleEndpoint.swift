import Logging

/// A Google endpoint the sidecar posts to for credentials (docs/CONTRACT.md §4a): the OAuth
/// token endpoint, the IAM Service Account Credentials API, the metadata server. An origin
/// (for the connection pool) and the path requests start from.
package struct GoogleEndpoint: Sendable, Equatable, CustomStringConvertible {
    package var scheme: UpstreamURL.Scheme
    package var host: String
    package var port: UInt16
    /// The path as given, without a trailing `/`; "" for none.
    package var path: String

    package static let oauthTokenDefault = "https://oauth2.googleapis.com/token"
    package static let iamDefault = "https://iamcredentials.googleapis.com"

    /// `scheme://host[:port][/path]`; a query, fragment or user name is refused. `what` names
    /// the flag or file in the line.
    package static func parse(_ text: String, what: String) throws(ConfigError) -> GoogleEndpoint {
        let (origin, rest) = try URLOrigin.parse(text, what: what)
        if rest.contains("?") || rest.contains("#") {
            throw ConfigError("\(what) \(ConfigError.quoted(text)) must not have a query or fragment")
        }
        var path = String(rest)
        while path.hasSuffix("/") { path.removeLast() }
        return GoogleEndpoint(scheme: origin.scheme, host: origin.host, port: origin.port, path: path)
    }

    var origin: Origin {
        Origin(scheme: scheme, host: host, port: port, hostHeader: URLOrigin(scheme: scheme, host: host, port: port).hostHeader)
    }

    /// The request target for `suffix` under the path (`suffix` starts with `/`, or is "").
    func target(_ suffix: String) -> String {
        let joined = path + suffix
        return joined.isEmpty ? "/" : joined
    }

    package var description: String { "\(origin)\(path)" }
}

extension EndpointClient {
    /// An answer from Google's credential endpoints is a few kilobytes; more is not one of them.
    static let googleMaxBody = 64 * 1024

    /// A client for a Google endpoint: `tls` (the system's CAs) for https only.
    convenience init(loop: EventLoop, endpoint: GoogleEndpoint, name: String, tls: TLSContext?, timeout: Double,
                     maxConnections: Int = 2, keptFields: [String] = [], logger: Logger) {
        self.init(loop: loop, origin: endpoint.origin, name: name, tls: endpoint.scheme == .https ? tls : nil, timeout: timeout,
                  maxConnections: maxConnections, maxBody: Self.googleMaxBody, keptFields: keptFields, logger: logger)
    }
}
