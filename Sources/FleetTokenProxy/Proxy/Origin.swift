/// Where a pool's connections go: scheme, host, port and the `Host` header to send.
public struct Origin: Sendable, Equatable, CustomStringConvertible {
    public var scheme: UpstreamURL.Scheme
    public var host: String
    public var port: UInt16
    public var hostHeader: String

    public init(scheme: UpstreamURL.Scheme, host: String, port: UInt16, hostHeader: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.hostHeader = hostHeader
    }

    public init(_ url: UpstreamURL) {
        self.init(scheme: url.scheme, host: url.host, port: url.port, hostHeader: url.hostHeader)
    }

    public var description: String { "\(scheme.rawValue)://\(hostHeader)" }
}
