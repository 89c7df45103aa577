import FleetTokenProxy

/// `HTTP1Parser.parseRequest`: a head it accepts is well-formed by RFC 9112's rules, ends
/// where its CRLF CRLF ends whatever follows, is not yet accepted one byte earlier, frames its
/// body the one way its fields allow, and re-serialised is accepted again as the same request.
public enum RequestHeadInvariant: ParserInvariant {
    public static let name = "request-head"
    static let maxHeadBytes = 8192
    static let maxHeaderCount = 64

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        guard let (head, _) = try HeadBoundary.accepted(input, maxHeadBytes: maxHeadBytes, minimumLength: 16, parse: parse, same: same)
        else { return }
        try checkFields(head)
        try checkFraming(head)
        let serialized = "\(head.method) \(head.target) HTTP/1.\(head.minorVersion)\r\n" + HeadBoundary.fieldLines(head.headers)
        try HeadBoundary.reread(serialized, as: head, parse: { HTTP1Parser.parseRequest($0, maxHeadBytes: .max, maxHeaderCount: .max) }, same: same)
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> HeadParseResult<RequestHead> {
        HTTP1Parser.parseRequest(bytes, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount)
    }

    static func checkFields(_ head: RequestHead) throws(InvariantViolation) {
        try expect(ByteRules.isToken(head.method), "method is not a token")
        try expect(head.target.utf8.first == UInt8(ascii: "/"), "target is not in origin form")
        try expect(head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "target has a byte that is not VCHAR")
        try expect(head.minorVersion == 0 || head.minorVersion == 1, "version HTTP/1.\(head.minorVersion)")
        try expect(head.headers.fields.count <= maxHeaderCount, "more fields than the bound")
        try HeadBoundary.checkFieldLines(head.headers)
        let hosts = head.headers.values("Host").count
        try expect(hosts <= 1 && (head.minorVersion == 0 || hosts == 1), "\(hosts) Host fields in HTTP/1.\(head.minorVersion)")
    }

    /// RFC 9112 §6.3 for a request, with every ambiguous combination refused.
    static func checkFraming(_ head: RequestHead) throws(InvariantViolation) {
        let te = head.headers.values("Transfer-Encoding")
        let cl = head.headers.values("Content-Length")
        switch head.framing {
        case .chunked:
            try expect(te.count == 1 && te[0].lowercased() == "chunked" && cl.isEmpty && head.minorVersion == 1,
                       "chunked framing from Transfer-Encoding \(te.count)x, Content-Length \(cl.count)x")
        case .contentLength(let n):
            try expect(te.isEmpty && !cl.isEmpty, "Content-Length framing without exactly the Content-Length fields")
            for value in cl {
                try expect(value.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && Int(value) == n,
                           "a Content-Length field differs from the framing length \(n)")
            }
        case .none:
            try expect(te.isEmpty && cl.isEmpty, "no framing although Transfer-Encoding or Content-Length is present")
        case .untilClose:
            throw InvariantViolation("a request read until close")
        }
    }

    static func same(_ a: RequestHead, _ b: RequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion
            && a.framing == b.framing && a.keepAlive == b.keepAlive && a.expectsContinue == b.expectsContinue
            && HeadBoundary.sameFields(a.headers, b.headers)
    }
}
