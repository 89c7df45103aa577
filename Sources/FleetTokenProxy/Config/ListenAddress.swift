#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the sidecar (or its admin endpoint) listens (docs/CONTRACT.md §6 `--listen`, `--admin-listen`).
package enum ListenAddress: Equatable, Sendable, CustomStringConvertible {
    /// `host` is a numeric IPv4 or IPv6 literal in canonical form, without brackets.
    case inet(host: String, port: UInt16)
    /// An absolute filesystem path.
    case unix(path: String)

    /// Parses `host:port`, `[v6]:port` or `unix:/abs/path`. `localhost` means 127.0.0.1 (never
    /// a name lookup: what a name resolves to can change, a loopback check cannot). Port 0 asks
    /// the kernel for an ephemeral port.
    package static func parse(_ text: String) throws(ConfigError) -> ListenAddress {
        let usage = "expected host:port, [v6]:port or unix:/path"
        if text.hasPrefix("unix:") {
            return .unix(path: try unixPath(text.dropFirst("unix:".count)))
        }

        let hostText: Substring
        let portText: Substring
        let host: String
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ConfigError("listen address \(ConfigError.quoted(text)) has no closing ']' (\(usage))")
            }
            hostText = text[text.index(after: text.startIndex)..<close]
            let afterBracket = text[text.index(after: close)...]
            guard afterBracket.first == ":" else {
                throw ConfigError("listen address \(ConfigError.quoted(text)) has no port (\(usage))")
            }
            portText = afterBracket.dropFirst()
            guard let address = IPAddress(v6: hostText) else {
                throw ConfigError("\(ConfigError.quoted(hostText)) is not an IPv6 address")
            }
            host = address.text
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ConfigError("listen address \(ConfigError.quoted(text)) has no port (\(usage))")
            }
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
            if hostText.contains(":") {
                throw ConfigError("IPv6 listen addresses need brackets, as in [::1]:4180, not \(ConfigError.quoted(text))")
            }
            if hostText.isEmpty {
                throw ConfigError("listen address \(ConfigError.quoted(text)) has no host (\(usage))")
            }
            if hostText == "localhost" {
                host = "127.0.0.1"
            } else if let address = IPAddress(v4: hostText) {
                host = address.text
            } else {
                throw ConfigError("listen host \(ConfigError.quoted(hostText)) is not a numeric IP address or localhost")
            }
        }
        guard let port = parsePort(portText) else {
            throw ConfigError("listen port \(ConfigError.quoted(portText)) is not a number from 0 to 65535")
        }
        return .inet(host: host, port: port)
    }

    /// True for 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) and unix sockets: the addresses
    /// only processes on this host can reach.
    package var isLoopback: Bool {
        switch self {
        case .unix:
            return true
        case .inet(let host, _):
            return IPAddress(host)?.isLoopback ?? false
        }
    }

    package var description: String {
        switch self {
        case .unix(let path): return "unix:\(path)"
        case .inet(let host, let port):
            return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    private static func unixPath(_ path: Substring) throws(ConfigError) -> String {
        guard path.hasPrefix("/") else {
            throw ConfigError("unix socket path \(ConfigError.quoted(path)) must be absolute, as in unix:/run/fleet-token-proxy.sock")
        }
        guard !path.hasSuffix("/") else {
            throw ConfigError("unix socket path \(ConfigError.quoted(path)) names a directory")
        }
        guard !path.utf8.contains(0) else {
            throw ConfigError("unix socket path contains a NUL byte")
        }
        guard path.utf8.count <= maxUnixPathBytes else {
            throw ConfigError("unix socket path \(ConfigError.quoted(path)) is longer than \(maxUnixPathBytes) bytes")
        }
        return String(path)
    }

    /// `sun_path` holds the path and its terminating NUL (108 bytes on Linux, 104 on macOS).
    static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
}

/// A TCP port: 1 to 5 ASCII digits, at most 65535. Signs, spaces and empty text are refused.
func parsePort<S: StringProtocol>(_ text: S) -> UInt16? {
    guard (1...5).contains(text.utf8.count) else { return nil }
    var value: UInt32 = 0
    for byte in text.utf8 {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        value = value * 10 + UInt32(byte - UInt8(ascii: "0"))
    }
    return value <= UInt32(UInt16.max) ? UInt16(value) : nil
}

/// A numeric IP address, parsed and printed by the C library (`inet_pton`, `inet_ntop`), the
/// same code that will bind or connect to it.
struct IPAddress: Equatable, Sendable {
    /// 4 bytes for IPv4, 16 for IPv6, network order.
    var bytes: [UInt8]

    var isV6: Bool { bytes.count == 16 }

    init?<S: StringProtocol>(v4 text: S) {
        guard let bytes = Self.presentationToNetwork(AF_INET, text, size: 4) else { return nil }
        self.bytes = bytes
    }

    init?<S: StringProtocol>(v6 text: S) {
        guard let bytes = Self.presentationToNetwork(AF_INET6, text, size: 16) else { return nil }
        self.bytes = bytes
    }

    /// Either family; an IPv6 literal has a ':' and an IPv4 one never does.
    init?<S: StringProtocol>(_ text: S) {
        if text.contains(":") { self.init(v6: text) } else { self.init(v4: text) }
    }

    /// Canonical text: `::1` for `0:0:0:0:0:0:0:1`, lower-case hex.
    var text: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = isV6 ? AF_INET6 : AF_INET
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "?" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    var isLoopback: Bool {
        if !isV6 { return bytes[0] == 127 }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        // IPv4-mapped (::ffff:127.x.y.z): an IPv6 socket bound to it only hears loopback.
        let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        return bytes[0..<12].elementsEqual(mappedPrefix) && bytes[12] == 127
    }

    private static func presentationToNetwork<S: StringProtocol>(_ family: Int32, _ text: S, size: Int) -> [UInt8]? {
        // inet_pton stops at a NUL; one inside the text must not pass for the part before it.
        guard !text.utf8.contains(0), text.utf8.count < 64 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let result = String(text).withCString { cText in
            bytes.withUnsafeMutableBytes { inet_pton(family, cText, $0.baseAddress) }
        }
        return result == 1 ? bytes : nil
    }
}
