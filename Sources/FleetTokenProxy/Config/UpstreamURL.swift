/// Where Fleet Engine calls are forwarded (docs/CONTRACT.md §6 `--upstream`): an origin and nothing more.
package struct UpstreamURL: Equatable, Sendable, CustomStringConvertible {
    package enum Scheme: String, Sendable {
        case http, https

        var defaultPort: UInt16 { self == .https ? 443 : 80 }
    }

    package var scheme: Scheme
    /// A lower-case DNS name, or an IP literal without brackets.
    package var host: String
    /// The port given, or 80/443 for the scheme.
    package var port: UInt16

    /// What to send as `Host:`: `example.com`, `example.com:8443`, `[::1]:8080`; the port is
    /// left out when it is the scheme's default.
    var hostHeader: String {
        URLOrigin(scheme: scheme, host: host, port: port).hostHeader
    }

    package var description: String { "\(scheme.rawValue)://\(hostHeader)" }

    /// Parses `scheme://host[:port][/]`. A user name or password, a path other than `/`, a
    /// query, a fragment and schemes other than http and https are refused: the sidecar adds
    /// the path of each call itself, and credentials for Fleet Engine come only from tokens.
    package static func parse(_ text: String) throws(ConfigError) -> UpstreamURL {
        let (origin, rest) = try URLOrigin.parse(text, what: "upstream URL")
        if rest.contains("#") {
            throw ConfigError("upstream URL \(ConfigError.quoted(text)) must not have a fragment")
        }
        if rest.contains("?") {
            throw ConfigError("upstream URL \(ConfigError.quoted(text)) must not have a query")
        }
        if !rest.isEmpty && rest != "/" {
            throw ConfigError("upstream URL \(ConfigError.quoted(text)) must not have a path (calls keep their own /v1/... path)")
        }
        return UpstreamURL(scheme: origin.scheme, host: origin.host, port: origin.port)
    }
}

/// The `scheme://host[:port]` part shared by the upstream URL and the provider URL template.
struct URLOrigin: Equatable, Sendable {
    var scheme: UpstreamURL.Scheme
    var host: String
    var port: UInt16

    var hostHeader: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return port == scheme.defaultPort ? bracketed : "\(bracketed):\(port)"
    }

    /// Splits `text` into its origin and the rest (path, query and fragment, as written).
    /// `what` names the URL in messages ("upstream URL").
    static func parse(_ text: String, what: String) throws(ConfigError) -> (URLOrigin, Substring) {
        // The provider URL's query may hold a credential: never echo it whole.
        let shown = ConfigError.quoted(RedactedURL.text(text))
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
            throw ConfigError("\(what) \(shown) must start with http:// or https://")
        }
        let schemeText = text[..<colon].lowercased()
        guard let scheme = UpstreamURL.Scheme(rawValue: schemeText) else {
            throw ConfigError("\(what) \(shown) must start with http:// or https://")
        }

        let afterScheme = text[text.index(colon, offsetBy: 3)...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let rest = afterScheme[authorityEnd...]

        if authority.contains("@") {
            throw ConfigError("\(what) must not contain a user name or password; send credentials as headers")
        }
        if authority.contains("{") || authority.contains("}") {
            throw ConfigError("\(what) \(shown): placeholders are allowed only in the path and query, not in the host")
        }

        let hostText: Substring
        var portText: Substring?
        let host: String
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ConfigError("\(what) \(shown) has no closing ']' after its IPv6 address")
            }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let afterBracket = authority[authority.index(after: close)...]
            if !afterBracket.isEmpty {
                guard afterBracket.first == ":" else {
                    throw ConfigError("\(what) \(shown) has text after its IPv6 address")
                }
                portText = afterBracket.dropFirst()
            }
            guard let address = IPAddress(v6: hostText) else {
                throw ConfigError("\(what) host \(ConfigError.quoted(hostText)) is not an IPv6 address")
            }
            host = address.text
        } else {
            if let portColon = authority.firstIndex(of: ":") {
                hostText = authority[..<portColon]
                portText = authority[authority.index(after: portColon)...]
                if portText!.contains(":") {
                    throw ConfigError("\(what) \(shown): IPv6 addresses need brackets, as in http://[::1]:8080")
                }
            } else {
                hostText = authority
            }
            host = try hostName(hostText, what: what)
        }

        var port = scheme.defaultPort
        if let portText {
            guard let given = parsePort(portText), given != 0 else {
                throw ConfigError("\(what) port \(ConfigError.quoted(portText)) is not a number from 1 to 65535")
            }
            port = given
        }
        return (URLOrigin(scheme: scheme, host: host, port: port), rest)
    }

    /// A DNS name (letters, digits, '-', '_', '.') or a dotted IPv4 address, lower-cased.
    private static func hostName(_ text: Substring, what: String) throws(ConfigError) -> String {
        guard !text.isEmpty else { throw ConfigError("\(what) has no host") }
        guard text.utf8.count <= 253 else { throw ConfigError("\(what) host is longer than 253 characters") }
        var digitsAndDotsOnly = true
        // Two dots in a row, found in the same pass: `contains("..")` would be a substring
        // search from _StringProcessing, whose code start-up would then fault in for this alone.
        var emptyLabel = text.utf8.first == UInt8(ascii: ".")
        var previous: UInt8 = 0
        for byte in text.utf8 {
            defer { previous = byte }
            switch byte {
            case UInt8(ascii: "."):
                if previous == UInt8(ascii: ".") { emptyLabel = true }
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                digitsAndDotsOnly = false
            default:
                throw ConfigError("\(what) host \(ConfigError.quoted(text)) is not a valid host name")
            }
        }
        if emptyLabel {
            throw ConfigError("\(what) host \(ConfigError.quoted(text)) has an empty label")
        }
        // "10.1" or "999.1.1.1" would be read differently by different resolvers: only a
        // well-formed dotted quad is taken as an address.
        if digitsAndDotsOnly {
            guard let address = IPAddress(v4: text) else {
                throw ConfigError("\(what) host \(ConfigError.quoted(text)) is not a valid IPv4 address")
            }
            return address.text
        }
        return text.lowercased()
    }
}
