import FleetTokenProxy

/// `H1MessageTranslation.requestHead`: an HTTP/2 client's request head (any field list, as
/// nghttp2 or a broken client might hand it over) as the one HTTP/1.1 request head sent
/// upstream. Promises: unless refused, the head parses as exactly one HTTP/1.1 request head, all
/// of it, with the `:method` and `:path` it was given, one `Host` (the upstream's), one
/// `Authorization` (the sidecar's), the framing the sidecar chose (the `content-length` given,
/// else chunked), and every other field line one of the given fields unchanged or the given
/// non-empty `cookie` values joined (one line, none when there are none) — so no CR, LF or NUL of a value can start a line or a request.
///
/// The input is a field list as `H2ResponseTranslationInvariant` reads it.
public enum H2RequestTranslationInvariant: ParserInvariant {
    public static let name = "h2-request-head"
    static let host = "fleet.example:443"
    static let authorization = "Bearer fuzz-token"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let fields = H2ResponseTranslationInvariant.decode(input)
        guard let head = H1MessageTranslation.requestHead(fields: fields, host: host, token: "fuzz-token") else { return }
        try checkHead(head, from: fields)
    }

    static func checkHead(_ head: [UInt8], from fields: [(name: [UInt8], value: [UInt8])]) throws(InvariantViolation) {
        let parsed = head.withUnsafeBytes { HTTP1Parser.parseRequest($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let request, let consumed) = parsed else { throw InvariantViolation("the head does not parse: \(parsed)") }
        try expect(consumed == head.count, "the head parses as \(consumed) of its \(head.count) bytes")
        func given(_ name: String) -> [String] {
            fields.filter { $0.name == Array(name.utf8) }.map { String(decoding: $0.value, as: UTF8.self) }
        }
        try expect(request.method == (given(":method").first ?? "POST"), "another method")
        try expect(request.target == (given(":path").first ?? "/v1/x"), "another target")
        let length = given("content-length").first
        try expect(request.framing == (length.flatMap { Int($0) }.map { .contentLength($0) } ?? .chunked), "another framing")
        let crumbs = given("cookie").filter { !$0.isEmpty }
        let cookies = crumbs.joined(separator: "; ")
        var hosts = 0, authorizations = 0, cookieLines = 0
        for field in request.headers.fields {
            switch field.name.lowercased() {
            case "host":
                hosts += 1
                try expect(field.value == host, "another Host")
            case "authorization":
                authorizations += 1
                try expect(field.value == authorization, "another Authorization")
            case "content-length", "transfer-encoding":
                continue
            case "cookie":
                cookieLines += 1
                try expect(field.value == cookies, "a cookie line that is not the given cookies joined")
            default:
                try expect(fields.contains { $0.name == Array(field.name.utf8) && $0.value == Array(field.value.utf8) },
                           "a field line that is not one of the given fields")
            }
        }
        try expect(hosts == 1 && authorizations == 1, "\(hosts) Host and \(authorizations) Authorization lines")
        try expect(cookieLines == (crumbs.isEmpty ? 0 : 1), "\(cookieLines) cookie lines for \(crumbs.count) non-empty cookies")
    }
}
