import FleetTokenProxy

/// `HTTP1Parser.parseResponse`: the same promises as the request side (see
/// `RequestHeadInvariant`), with RFC 9112 §6.3's framing as a client reads it.
public enum ResponseHeadInvariant: ParserInvariant {
    public static let name = "response-head"
    static let maxHeadBytes = 8192
    static let maxHeaderCount = 64

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        guard let (head, _) = try HeadBoundary.accepted(input, maxHeadBytes: maxHeadBytes, minimumLength: 16, parse: parse, same: same)
        else { return }
        try expect((100...999).contains(head.status), "status \(head.status)")
        try expect(head.minorVersion == 0 || head.minorVersion == 1, "version HTTP/1.\(head.minorVersion)")
        try expect(head.reason.utf8.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 }, "reason has a control byte")
        try HeadBoundary.checkFieldLines(head.headers)
        try checkFraming(head)

        let serialized = "HTTP/1.\(head.minorVersion) \(head.status) \(head.reason)\r\n" + HeadBoundary.fieldLines(head.headers)
        try HeadBoundary.reread(serialized, as: head, parse: { HTTP1Parser.parseResponse($0, maxHeadBytes: .max, maxHeaderCount: .max) }, same: same)
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> HeadParseResult<ResponseHead> {
        HTTP1Parser.parseResponse(bytes, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount)
    }

    static func checkFraming(_ head: ResponseHead) throws(InvariantViolation) {
        let te = head.headers.values("Transfer-Encoding")
        let cl = head.headers.values("Content-Length")
        let declared = head.framing(requestMethod: "GET")
        let noBody = head.status < 200 || head.status == 204 || head.status == 304
        try expect(head.framing(requestMethod: "HEAD") == .none, "an answer to HEAD has a body")
        if noBody { try expect(declared == .none, "status \(head.status) has a body") }
        switch declared {
        case .chunked:
            try expect(!te.isEmpty && head.minorVersion == 1, "chunked without Transfer-Encoding in HTTP/1.1")
        case .contentLength(let n):
            try expect(te.isEmpty && !cl.isEmpty, "Content-Length framing next to Transfer-Encoding or without Content-Length")
            for value in cl { try expect(Int(value) == n, "a Content-Length field differs from the framing length \(n)") }
        case .untilClose:
            try expect(!head.keepAlive, "a body read until close on a connection kept alive")
        case .none:
            try expect(noBody, "status \(head.status) without a body")
        }
        if !te.isEmpty && !cl.isEmpty { try expect(!head.keepAlive, "Transfer-Encoding and Content-Length on a kept connection") }
    }

    static func same(_ a: ResponseHead, _ b: ResponseHead) -> Bool {
        a.status == b.status && a.minorVersion == b.minorVersion && a.reason.utf8.elementsEqual(b.reason.utf8)
            && a.keepAlive == b.keepAlive && a.framing(requestMethod: "GET") == b.framing(requestMethod: "GET")
            && HeadBoundary.sameFields(a.headers, b.headers)
    }
}
