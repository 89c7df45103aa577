/// The operator's token provider URL (docs/CONTRACT.md §4, §6 `--provider-url`), such as
/// `https://auth.internal/fleet/token/{type}/{id}`, turned into one request target per entity.
///
/// Placeholders: `{type}` (`vehicle`, `trip`, `delivery_vehicle`, `task`, `tracking`, `fleet`),
/// `{id}` (`*` for the fleet) and `{provider}`. They may appear in the path and query only,
/// and `{id}` must appear: without it every entity would be sent the same request and so be
/// given the same token.
package struct ProviderURLTemplate: Sendable, CustomStringConvertible {
    package var scheme: UpstreamURL.Scheme
    /// A lower-case DNS name, or an IP literal without brackets.
    package var host: String
    /// The port given, or 80/443 for the scheme.
    package var port: UInt16

    /// What to send as `Host:`; the port is left out when it is the scheme's default.
    var hostHeader: String {
        URLOrigin(scheme: scheme, host: host, port: port).hostHeader
    }

    /// The template for logs: its query values and fragment hidden (`RedactedURL`), as its
    /// query may hold a credential.
    package var description: String { RedactedURL.text(text) }

    enum Piece: Equatable, Sendable {
        /// Already valid URL text, copied as is.
        case literal(String)
        case type
        case id
        case provider
    }

    /// The origin-form target (path and query) as literal text and placeholders.
    let pieces: [Piece]
    private let text: String

    package static func parse(_ text: String) throws(ConfigError) -> ProviderURLTemplate {
        let (origin, rest) = try URLOrigin.parse(text, what: "provider URL")
        let shown = ConfigError.quoted(RedactedURL.text(text))
        if rest.contains("#") {
            throw ConfigError("provider URL \(shown) must not have a fragment (it is never sent)")
        }
        // An origin-form target always starts with '/': "https://h?x={id}" asks for "/?x=...".
        var target = String(rest)
        if !target.hasPrefix("/") { target = "/" + target }

        var pieces: [Piece] = []
        var literal: [UInt8] = []
        let bytes = Array(target.utf8)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            switch byte {
            case UInt8(ascii: "{"):
                guard let close = bytes[i...].firstIndex(of: UInt8(ascii: "}")) else {
                    throw ConfigError("provider URL \(shown) has a '{' that is never closed")
                }
                let name = String(decoding: bytes[(i + 1)..<close], as: UTF8.self)
                let piece: Piece
                switch name {
                case "type": piece = .type
                case "id": piece = .id
                case "provider": piece = .provider
                default:
                    throw ConfigError("provider URL has an unknown placeholder \(ConfigError.quoted("{" + name + "}")); use {type}, {id} or {provider}")
                }
                if !literal.isEmpty {
                    pieces.append(.literal(String(decoding: literal, as: UTF8.self)))
                    literal.removeAll()
                }
                pieces.append(piece)
                i = close + 1
            case UInt8(ascii: "}"):
                throw ConfigError("provider URL \(shown) has a '}' without a '{'")
            case UInt8(ascii: "%"):
                guard i + 2 < bytes.count,
                      PercentDecoding.hexValue(bytes[i + 1]) != nil, PercentDecoding.hexValue(bytes[i + 2]) != nil
                else {
                    throw ConfigError("provider URL \(shown) has a '%' that is not followed by two hex digits")
                }
                literal.append(contentsOf: bytes[i...(i + 2)])
                i += 3
            default:
                guard isAllowedLiteral(byte) else {
                    // `bytes` ends where `text` ends, so this is the offset in what the operator wrote.
                    throw ConfigError("provider URL \(shown) has a character that must be percent-encoded at offset \(text.utf8.count - bytes.count + i)")
                }
                literal.append(byte)
                i += 1
            }
        }
        if !literal.isEmpty { pieces.append(.literal(String(decoding: literal, as: UTF8.self))) }
        guard pieces.contains(.id) else {
            throw ConfigError("provider URL \(shown) has no {id} placeholder, so every entity would get the same token")
        }
        return ProviderURLTemplate(scheme: origin.scheme, host: origin.host, port: origin.port, pieces: pieces, text: text)
    }

    /// The origin-form request target for one entity, every substituted value percent-encoded
    /// so that an id can never change the URL's shape (everything but ALPHA DIGIT - . _ ~ is
    /// encoded).
    ///
    /// A value that is only `.` or `..` has its dots encoded too (`%2E`): as a whole path
    /// segment it would otherwise be a dot-segment that servers remove, which changes the path.
    package func target(for key: EntityKey) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        for piece in pieces {
            switch piece {
            case .literal(let text): out.append(contentsOf: text.utf8)
            case .type: Self.appendEncoded(key.type.rawValue, to: &out)
            case .id: Self.appendEncoded(key.id, to: &out)
            case .provider: Self.appendEncoded(key.provider, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendEncoded(_ value: String, to out: inout [UInt8]) {
        PercentEncoding.append(value, encodingDots: value == "." || value == "..", to: &out)
    }

    /// What a path or query may hold literally (RFC 3986 pchar, '/' and '?'); anything else
    /// (space, '"', '<', '|', non-ASCII, controls) would break the request line.
    private static func isAllowedLiteral(_ byte: UInt8) -> Bool {
        if PercentEncoding.isUnreserved(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }
}
