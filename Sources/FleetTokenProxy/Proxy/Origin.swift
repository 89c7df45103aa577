/// Where a pool's connections go: scheme, host, port and the `Host` header to send.
struct Origin: Sendable, Equatable, CustomStringConvertible {
    package var scheme: UpstreamURL.Scheme
    package var host: String
    package var port: UInt16
    var hostHeader: String

    package init(scheme: UpstreamURL.Scheme, host: String, port: UInt16, hostHeader: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.hostHeader = hostHeader
    }

    package init(_ url: UpstreamURL) {
        self.init(scheme: url.scheme, host: url.host, port: url.port, hostHeader: url.hostHeader)
    }

    package var description: String { "\(scheme.rawValue)://\(hostHeader)" }
}
