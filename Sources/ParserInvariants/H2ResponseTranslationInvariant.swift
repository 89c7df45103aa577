import FleetTokenProxy

/// `H2MessageTranslation.http1Head`: an HTTP/2 answer's head (any field list, as nghttp2 or a
/// broken peer might hand it over) as the HTTP/1.1 head relayed to a client. Promises: when it
/// makes a head, that head parses as exactly one HTTP/1.1 response head, all of it, with the
/// `:status` it was given; every field line in it is one of the given fields unchanged, or the
/// one framing line the sidecar writes — so no CR, LF or NUL of a value can start a line of
/// its own.
///
/// The input is a field list: per field, a byte with the name's length, a byte with the
/// value's length, then the name and the value.
public enum H2ResponseTranslationInvariant: ParserInvariant {
    public static let name = "h2-response-head"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let fields = decode(input)
        guard let head = H2MessageTranslation.http1Head(fields: fields) else { return }
        try checkHead(head, from: fields)
    }

    static func decode(_ input: UnsafeRawBufferPointer) -> [(name: [UInt8], value: [UInt8])] {
        var fields: [(name: [UInt8], value: [UInt8])] = []
        var i = 0
        while i + 2 <= input.count {
            let nameCount = Int(input[i]), valueCount = Int(input[i + 1])
            i += 2
            guard i + nameCount + valueCount <= input.count else { break }
            fields.append((Array(input[i..<i + nameCount]), Array(input[i + nameCount..<i + nameCount + valueCount])))
            i += nameCount + valueCount
        }
        return fields
    }

    static func checkHead(_ head: [UInt8], from fields: [(name: [UInt8], value: [UInt8])]) throws(InvariantViolation) {
        let parsed = head.withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let response, let consumed) = parsed else { throw InvariantViolation("the head does not parse: \(parsed)") }
        try expect(consumed == head.count, "the head parses as \(consumed) of its \(head.count) bytes")
        let status = fields.first { $0.name == Array(":status".utf8) }.map { String(decoding: $0.value, as: UTF8.self) }
        try expect(status == String(response.status), "status \(response.status) for :status \(status ?? "none")")
        var framingLines = 0
        for field in response.headers.fields {
            if field.name == "Content-Length" || field.name == "Transfer-Encoding" {
                framingLines += 1
                continue
            }
            try expect(fields.contains { $0.name == Array(field.name.utf8) && $0.value == Array(field.value.utf8) },
                       "a field line that is not one of the given fields")
        }
        try expect(framingLines == 1, "\(framingLines) framing lines")
    }
}
