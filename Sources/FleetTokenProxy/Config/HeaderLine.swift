/// Static headers sent to the token provider (docs/CONTRACT.md §6 `--provider-header`,
/// `--provider-header-file`). Their values are backend credentials: no message here ever
/// contains a value, and a malformed line is not echoed either, since it may be a value.
package enum HeaderLine {
    /// Header fields the sidecar's HTTP client owns: framing, routing and connection
    /// management (RFC 9110 §7.6.1 hop-by-hop fields). A configured one could desynchronize the
    /// request or the connection, so they are refused rather than sent.
    static let refusedNames = [
        "Host", "Content-Length", "Transfer-Encoding", "Connection",
        "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade",
    ]

    /// "Name: value" → (name, value). The name must be an RFC 9110 token; the value is trimmed
    /// of surrounding spaces and tabs; CR, LF and NUL are refused anywhere in the line.
    ///
    /// Also refused: the `refusedNames` fields (Host, Content-Length, Transfer-Encoding,
    /// Connection and the other hop-by-hop fields), other control characters in the value
    /// (RFC 9110 §5.5) and an empty value (usually an unset variable in a unit file).
    package static func parse(_ line: String) throws(ConfigError) -> (name: String, value: String) {
        for byte in line.utf8 {
            switch byte {
            case 0x0D, 0x0A: throw ConfigError("header line contains a CR or LF")
            case 0x00: throw ConfigError("header line contains a NUL byte")
            default: continue
            }
        }
        guard let colon = line.firstIndex(of: ":") else {
            throw ConfigError("header line is not of the form 'Name: value'")
        }
        let name = line[..<colon]
        guard !name.isEmpty else {
            throw ConfigError("header line has an empty name (expected 'Name: value')")
        }
        guard name.utf8.allSatisfy(isTokenCharacter) else {
            throw ConfigError("header name is not an RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~ only, no spaces before ':')")
        }
        if let refused = refusedNames.first(where: { name.asciiCaseInsensitiveEquals($0) }) {
            throw ConfigError("header \(refused) may not be configured: the sidecar sets it itself")
        }

        let value = trimmed(line[line.index(after: colon)...])
        guard !value.isEmpty else {
            throw ConfigError("header \(name) has an empty value")
        }
        // Past this point the name is known to be a token, so it may be named; the value never.
        guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
            throw ConfigError("header \(name) has a control character in its value")
        }
        return (name: String(name), value: String(value))
    }

    /// A header file: one header a line; blank lines and lines starting with # are skipped.
    /// Error messages name the line number but never the value (it is a secret).
    ///
    /// CRLF line ends, indentation and a leading UTF-8 byte order mark are accepted, as editors
    /// write them.
    package static func parseFile(contents: String) throws(ConfigError) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        var text = Substring(contents)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        // Split on the byte, not on Character: "\r\n" is one Character in Swift.
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (index, lineBytes) in lines.enumerated() {
            var line = Substring(lineBytes)
            if line.utf8.last == 0x0D { line = Substring(line.utf8.dropLast()) }
            let content = trimmed(line)
            if content.isEmpty || content.hasPrefix("#") { continue }
            do throws(ConfigError) {
                headers.append(try parse(String(content)))
            } catch {
                throw ConfigError("header file line \(index + 1): \(error.message)")
            }
        }
        return headers
    }

    /// RFC 9110 tchar: ALPHA DIGIT ! # $ % & ' * + - . ^ _ ` | ~
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Without surrounding spaces and tabs (RFC 9110 OWS). By UTF-8 byte, not by Character: a
    /// space followed by a combining mark is one Character, and its space must go too.
    private static func trimmed(_ text: Substring) -> Substring {
        let isOWS: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !isOWS($0) }) else { return text[text.endIndex...] }
        let last = bytes.lastIndex(where: { !isOWS($0) })!
        return Substring(bytes[first...last])
    }
}
